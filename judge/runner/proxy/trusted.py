"""The trusted test process's side of an imported problem's grading (docs/IMPORTED_GRADING.md).

`connect` stands a module for the student's in `sys.modules` (`from solution import f` gives a
handle, remote.Remote); the tests themselves, `checker` and the verdict stay in this process, which
never holds the submission's code. `submission_cpu()` asks the grader (outside both sandboxes)
for the CPU time the submission's process tree has used: `checker.time_limit` measures with it,
less the proxy's own cost per request, which `overhead_per_call()` measures once and
`overhead_now()` again where a block would fail.
"""

from __future__ import annotations

import os
import sys
import types

from . import served
from .capabilities import Guard
from .endpoint import Endpoint
from .protocol import Kind, check_message
from .remote import Remote
from .wire import NESTED_RECURSION_LIMIT, SPIN_S, Channel, PeerGone, WireError

EXIT_PEER_GONE = 75  # the submission's process ended first (grading/launch.py reads it)
# The proxy's own cost is 15-55 us a request on an idle 2-core VM and 45-100 us on a loaded or
# slow one. Measured before the student's module is imported, nothing of the submission's can
# skew it, so it is taken as measured (up to MAX_CALIBRATED_S, a bound on a stalled host); a
# cap of 60 us there left 20,000 calls of quick-lru's own solution 0.26-0.62 s short of their
# cost on a slow machine (IE: the reference failed its time_limit). A measure taken while the
# student's code is live (overhead_now, or a calibration made late) is bounded by
# RECHECK_FACTOR times the first one, and never below MAX_CALL_OVERHEAD_S.
MAX_CALIBRATED_S = 1e-3
MAX_CALL_OVERHEAD_S = 60e-6
RECHECK_FACTOR = 1.5
CALIBRATION_CALLS = 1000      # rounds as long as a block's: a request costs more in long runs
CALIBRATION_ROUNDS = 3
RECHECK_CALLS = 3000          # overhead_now's requests at most: the longer run costs more each
MAX_STREAMS = 32              # the tests' threads calling the submission at once (serve.py's cap)


class _Link:
    ep: Endpoint | None = None
    ctl_in: int | None = None
    ctl_out: int | None = None
    per_call: float | None = None


L = _Link()


_MODULE_DICT = vars(types.ModuleType)["__dict__"]


class SolutionModule(types.ModuleType):
    @property
    def __dict__(self):  # type: ignore[override]  # (the student's names are the peer's)
        """`vars(solution)`, `dir(solution)`, `inspect.getmembers(solution)`: the student's
        public names as they are now (handles and values, as `solution.name` gives them), over
        the stand-in's own dunders. A copy: the tests change the module by setting names."""
        own = _MODULE_DICT.__get__(self)
        if L.ep is None:
            return own
        names = L.ep.request("namespace", None)
        out = dict(own)
        if isinstance(names, dict):
            out.update((k, v) for k, v in names.items()
                       if isinstance(k, str) and not k.startswith("_"))
        return out

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        # with no endpoint (after the run) this is an AttributeError too, as for a missing name
        return L.ep.request("import", None, name)  # type: ignore[union-attr]

    def __setattr__(self, name, value):
        # `solution.unpack = watched` (a test counting the calls the student's code makes to
        # its own function) is set in the student's module, where that code reads it
        if name.startswith("__") and name.endswith("__") or L.ep is None:
            return super().__setattr__(name, value)
        L.ep.request("rootset", None, name, value)

    def __delattr__(self, name):
        if name.startswith("__") and name.endswith("__") or L.ep is None:
            return super().__delattr__(name)
        L.ep.request("rootdel", None, name)


def connect(fds: str, module: str, loop, guard: Guard, calibrate: bool) -> dict | None:
    """fds "IN,OUT,CTLIN,CTLOUT[,SIN,SOUT]" (the last two: the channel of the tests' other
    threads, proxy/streams.py). `calibrate`: the tests use time_limit, whose cost per request is
    measured now, before the student's module is imported (nothing of it runs yet to skew it).
    Returns None, or the import error the submission reported."""
    fd_in, fd_out, ctl_in, ctl_out, *streams = (int(x) for x in fds.split(","))
    ch = Channel(fd_in, fd_out, spin_s=SPIN_S)
    ep = Endpoint(ch, guarded=True, loop=loop, guard=guard)
    ep.lost = _gone
    ep.served = served.served_names()
    if check_message(ch.recv(), ep.side) is not Kind.READY:
        raise WireError("the submission's process did not start as expected")
    L.ep, L.ctl_in, L.ctl_out = ep, ctl_in, ctl_out
    ep.serving_cpu.report = _report_served
    if calibrate:
        overhead_per_call(before_import=True)
    ep.calls = 0
    ch.send({"t": "go"})
    hello = ch.recv()
    while hello.get("t") == "req" and ep.served:
        # the submission's module-level code uses a served module (`@gs.kernel`, served.py)
        ep.dispatch(hello)
        hello = ch.recv()
    if check_message(hello, ep.side) is not Kind.HELLO:
        raise WireError("the submission's process did not start as expected")
    if "error" in hello:
        err = hello["error"] if isinstance(hello["error"], dict) else {}
        return {k: (str(v)[:4000] if k != "line" else (v if type(v) is int else None))
                for k, v in err.items() if k in ("exc_type", "message", "line", "traceback")}
    sys.setrecursionlimit(max(sys.getrecursionlimit(), NESTED_RECURSION_LIMIT))
    if len(streams) == 2:
        ep.open_streams(Channel(*streams), MAX_STREAMS)
    sys.modules[module] = SolutionModule(module)
    loop.add_reader(ch.fd_in, ep.on_readable)
    return None


def _gone(exc: WireError):
    """The submission's process ended or broke the protocol: the test in progress is the one
    it happened in (the parent knows why it ended); nothing else can be judged."""
    os._exit(EXIT_PEER_GONE)


def guard(fn):
    try:
        return fn()
    except (PeerGone, WireError) as e:
        _gone(e)


def _connected() -> tuple[Endpoint, int, int]:
    """The link `connect` made (checker asks only when `active()`)."""
    if L.ep is None or L.ctl_in is None or L.ctl_out is None:
        raise RuntimeError("the call proxy is not connected")
    return L.ep, L.ctl_in, L.ctl_out


def submission_cpu() -> float:
    _, ctl_in, ctl_out = _connected()
    os.write(ctl_out, b"cpu\n")
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(ctl_in, 64)
        if not chunk:
            os._exit(EXIT_PEER_GONE)
        line += chunk
    return float(line.decode())


def _report_served(total: float) -> None:
    """Tells the grader the CPU time this process has spent serving the submission's requests
    (proxy/serving.py), which the suite's limits do not charge to the submission."""
    if L.ctl_out is None:
        return
    try:
        os.write(L.ctl_out, f"served {total:.6f}\n".encode())
    except OSError:
        pass  # the grader stopped listening: the run is ending


def served_cpu() -> float:
    """This process's CPU seconds spent serving the submission (the runner's watchdog)."""
    return L.ep.serving_cpu.total if L.ep is not None else 0.0


def serving_idle() -> None:
    """Between tests the main thread serves nothing: a serve a JudgeTimeout ended left its
    mark (proxy/serving.py)."""
    if L.ep is not None:
        L.ep.serving_cpu.idle()


def calls() -> int:
    return L.ep.calls if L.ep else 0


def overhead_per_call(before_import: bool = False) -> float:
    """The submission process's CPU time per request that does nothing: a request of the shape
    most calls have (two small arguments, a small answer) through the same path (decoded,
    dispatched, answered), so what remains of a block's time is the submission's own work.
    The median of a few rounds: the block runs under the machine's load of the moment, not its
    best. `before_import` (connect): no code of the submission's has run, so the figure stands
    as measured; measured later, it is capped like a recheck."""
    if L.per_call is None:
        rounds = [_ping_round(CALIBRATION_CALLS) for _ in range(CALIBRATION_ROUNDS)]
        median = sorted(rounds)[len(rounds) // 2]
        L.per_call = min(MAX_CALIBRATED_S if before_import else MAX_CALL_OVERHEAD_S, median)
    return L.per_call


def overhead_now(calls: int) -> float:
    """The same measure as `overhead_per_call`, taken now over `calls` requests (at most
    RECHECK_CALLS), in one run as long as the block's: a request costs the submission's process
    more in a long run of them than in short rounds (16 us in rounds of 300, 26-45 us in runs
    of 3,000 to 10,000, on an idle machine), and more under load. Taken while the student's code
    is live (a thread of it may burn CPU just then), so it is bounded by the calibration."""
    bound = max(MAX_CALL_OVERHEAD_S, RECHECK_FACTOR * overhead_per_call())
    return min(bound, _ping_round(max(CALIBRATION_CALLS, min(calls, RECHECK_CALLS))))


def _ping_round(n: int) -> float:
    """The submission's CPU seconds per request over `n` pings (and the measure's own)."""
    ep = _connected()[0]
    c0 = submission_cpu()
    for i in range(n):
        ep.request("ping", None, i, -i)
    return max(0.0, (submission_cpu() - c0) / (n + 1))


def active() -> bool:
    return L.ep is not None


__all__ = ["connect", "submission_cpu", "overhead_per_call", "overhead_now", "calls", "active", "served_cpu",
           "Remote"]
