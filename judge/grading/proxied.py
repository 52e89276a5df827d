"""One suite run of an imported problem (docs/IMPORTED_GRADING.md): the handbook's tests in a
trusted process, the submission in another, each in a sandbox of its own, joined by two pipes
that carry only the call proxy's messages (judge/runner/rpc/, wire.py).

    grader (here) --results pipe--  trusted sandbox: judge_runner --proxy (tests, checker)
          |  \\--cpu? pipes---------/          |  requests / answers
          \\--monitor--  submission sandbox: judge_runner.serve (the student's module)

The verdict is the trusted runner's event stream, read as for any other run (child_log): the
submission never holds a test, an expected value or the runner's pipe. The submission's CPU time
is measured here, from its sandbox's samples, and told to the trusted side for `time_limit`;
the suite's CPU limits count both processes. When the submission's process ends (a limit, a
crash), the trusted runner stops at once and this run ends as that process did.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import threading
import time

from judge.grading.results_pump import ResultsPump
from judge.grading.workdir import View
from judge.judging.bounded import SCRATCH_FILES, SCRATCH_MB
from judge.judging.child_log import ChildLog
from judge.judging.clock import PhaseClock, TimeLimits, suite_wall_net
from judge.runner.rpc.served import ENV as SERVED_ENV
from judge.runner.shared_tmp import ENV as SHARED_TMP_ENV
from judge.sandbox import Limits, child_pipe, probe_layers, run_sandboxed, scratchfs
from judge.sandbox.limits import MIB
from judge.sandbox.result import StopReason
from judge.sandbox.run import FIRST_PASSED_FD
from judge.sandbox.usage import Usage

log_ = logging.getLogger("judge")

EXIT_PEER_GONE = 75      # judge/runner/trusted.py
PIPE_BYTES = 1 << 20     # a big array in flight both ways cannot fill a pipe as easily
SAMPLE_WAIT_S = 1.0
AFTER_TRUSTED_S = 2.0    # the submission's process may take this long to notice the end
SHARED_OWNER = 65534     # nobody: the shared tmp's owner (_share)


def is_proxied(problem) -> bool:
    """Imported from the handbook: its tests run apart from the submission."""
    source = getattr(problem.config, "source", None)
    return source is not None and getattr(source, "format", None) == "handbook"


def _pipe() -> tuple[int, int]:
    """(read, write), both >= FIRST_PASSED_FD and close-on-exec."""
    r, w = os.pipe()
    out = []
    for fd in (r, w):
        try:
            out.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, FIRST_PASSED_FD))
        finally:
            os.close(fd)
    try:
        fcntl.fcntl(out[1], getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except OSError:
        pass
    return out[0], out[1]


class _Meter:
    """The submission sandbox's latest CPU sample, for the trusted side's `time_limit`."""

    def __init__(self):
        self.cond = threading.Condition()
        self.cpu, self.seq = 0.0, 0
        self.ended = False

    def sample(self, u: Usage) -> None:
        with self.cond:
            if u.cpu_s is not None:
                self.cpu = float(u.cpu_s)
            self.seq += 1
            self.cond.notify_all()

    def fresh(self) -> float:
        """The CPU time of a sample taken after this call (the call is the block's end)."""
        with self.cond:
            seq = self.seq
            self.cond.wait_for(lambda: self.seq > seq + 1 or self.ended, SAMPLE_WAIT_S)
            return self.cpu


def _answer_cpu(ctl_r: int, ctl_w: int, meter: _Meter) -> None:
    buf = b""
    try:
        while True:
            chunk = os.read(ctl_r, 64)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if line != b"cpu":
                    return
                os.write(ctl_w, f"{meter.fresh():.6f}\n".encode())
            if len(buf) > 64:
                return
    except OSError:
        return
    finally:
        os.close(ctl_r)
        os.close(ctl_w)


def _share(path: str) -> bool:
    """The folder both processes use as their temporary one (judge/runner/shared_tmp.py):
    a filesystem of its own, capped as each run's scratch is, where the host allows it (True),
    else the plain folder. Both sandboxes' uids write there (0777, no sticky bit: the
    submission may replace a file the test made, as `os.replace` does in one process). It
    belongs to neither run's uid nor to root: a root-owned folder a run mounts is opened to it
    read-only (sandbox/grants.py), and a run's own would be the other run's to lock."""
    mounted = False
    if probe_layers().layers.get("run_fs"):
        try:
            scratchfs.mount(path, SCRATCH_MB * MIB, SCRATCH_FILES, SHARED_OWNER, SHARED_OWNER)
            mounted = True
        except OSError as e:
            log_.warning("no filesystem of its own for the shared tmp %s: %s", path, e)
    if os.geteuid() == 0:
        os.chown(path, SHARED_OWNER, SHARED_OWNER)
    os.chmod(path, 0o777)
    return mounted


def _shared_env(env: dict, shared, problem=None) -> dict:
    out = {**env, "TMPDIR": str(shared), SHARED_TMP_ENV: str(shared)}
    if problem is not None and (names := served_modules(problem)):
        out[SERVED_ENV] = ",".join(names)
    return out


def served_modules(problem) -> list[str]:
    """The runtime modules the trusted side serves to the submission (rpc/served.py): the
    problem's handbook modules but `checker` (each side has its own: the test's is the one
    that judges) and those with an `install()` step (they patch the process they run in)."""
    hb = problem.config.handbook
    return [m for m in hb.modules if m != "checker" and m not in hb.install]


def attempt(problem, view: View, run: str, suite: str, submission, targets: list[str],
            limits: TimeLimits, device: str, on_events, stop=None):
    from judge.grading.suite_run import child_env
    from judge.judging.run_record import RunRecord

    lim = problem.limits
    conf, scratch = view.run_dirs(run, dict(limits.tests))
    _, sub_scratch = view.run_dirs(f"{run}-sub", {})
    _, shared = view.run_dirs(f"{run}-tmp", {})
    shared_fs = _share(str(shared))
    suite_dir = view.tests[suite]
    results_r, results_w = child_pipe()
    t2s_r, t2s_w = _pipe()
    s2t_r, s2t_w = _pipe()
    ctl_r, t2g_w = _pipe()
    g2t_r, ctl_w = _pipe()
    st2s_r, st2s_w = _pipe()    # the tests' other threads (judge/runner/rpc/streams.py)
    ss2t_r, ss2t_w = _pipe()
    box = dict(wall_s=suite_wall_net(lim), cpu_s=lim.cpu_s, memory_mb=lim.memory_mb,
               processes=64, file_size_mb=64, open_files=256,
               output_bytes=lim.output_kb * 1024, scratch_mb=SCRATCH_MB,
               scratch_files=SCRATCH_FILES)
    clock = PhaseClock(limits)
    out = RunRecord(suite=suite, log=ChildLog(), spawn_t=time.time(), clock=clock)
    meter = _Meter()
    trusted_done = threading.Event()
    done_at = [0.0]
    sub_result: dict = {}

    def sub_monitor(u: Usage):
        meter.sample(u)
        if trusted_done.is_set() and time.monotonic() - done_at[0] > AFTER_TRUSTED_S:
            return StopReason.ASKED
        return None

    def run_submission():
        try:
            sub_result["res"] = run_sandboxed(
                argv=[sys.executable, "-P", "-s", "-m", "judge_runner.serve",
                      "--in-fd", str(t2s_r), "--out-fd", str(s2t_w),
                      "--streams-fds", f"{st2s_r},{ss2t_w}", "--module", problem.module,
                      "--submission", str(submission)],
                ro_binds=[(str(p), str(p)) for p in (view.handbook, view.runner_parent,
                                                     submission.parent)],
                scratch=str(sub_scratch), rw_binds=[(str(shared), str(shared))],
                env=_shared_env(child_env(problem, view, submission.parent, device), shared,
                                problem),
                limits=Limits(**box), device=device, monitor=sub_monitor,
                pass_fds=(t2s_r, s2t_w, st2s_r, ss2t_w))
        except Exception as exc:  # the sandbox itself failed: the judge's fault
            sub_result["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            with meter.cond:
                meter.ended = True
                meter.cond.notify_all()

    sub_thread = threading.Thread(target=run_submission, name=f"sub-{run}", daemon=True)
    sub_thread.start()
    ctl_thread = threading.Thread(target=_answer_cpu, args=(ctl_r, ctl_w, meter), daemon=True)
    ctl_thread.start()

    argv = [sys.executable, "-P", "-s", "-m", "judge_runner",
            "--results-fd", str(results_w), "--module", problem.module,
            "--submission", str(submission),
            "--proxy", f"{s2t_r},{t2s_w},{g2t_r},{t2g_w},{ss2t_r},{st2s_w}",
            "--suite-dir", str(suite_dir), "--limits", str(conf / "limits.json"),
            "--default-limit", f"{limits.default_s:.3f}",
            "--import-limit", f"{limits.import_s:.3f}", *targets]

    def both(u: Usage) -> Usage:
        # the suite's CPU limits count the submission's process as well as the tests'
        cpu = None if u.cpu_s is None else u.cpu_s + meter.cpu
        return Usage(u.wall_s, cpu, u.wait_s)

    results = ResultsPump(out, clock, on_events, stop, usage=both)

    try:
        res = run_sandboxed(argv=[str(a) for a in argv],
                            ro_binds=[(str(p), str(p)) for p in (view.handbook, view.runner_parent,
                                                                 suite_dir, conf)],
                            scratch=str(scratch), rw_binds=[(str(shared), str(shared))],
                            env=_shared_env(child_env(problem, view, view.handbook, device),
                                            shared, problem),
                            limits=Limits(**box), device=device, monitor=results.monitor,
                            pass_fds=(results_w, s2t_r, t2s_w, g2t_r, t2g_w, ss2t_r, st2s_w),
                            readers={results_r: results.take})
    except Exception as exc:
        out.sandbox_error = f"{type(exc).__name__}: {exc}"
        out.wall_s = time.time() - out.spawn_t
        results.pump(clock.last)
        out.ended = True
        return out
    finally:
        os.close(results_r)
        done_at[0] = time.monotonic()
        trusted_done.set()
        sub_thread.join(timeout=box["wall_s"] + 30)
        if shared_fs:
            try:
                scratchfs.unmount(str(shared))
            except OSError as e:  # detached lazily; the grading folder goes with the view
                log_.warning("could not unmount the shared tmp of %s: %s", run, e)
    last = clock.last
    final = both(Usage(float(res.wall_s), res.cpu_s if res.cpu_s is not None else last.cpu_s,
                       res.wait_s if res.wait_s is not None else last.wait_s))
    results.pump(final)
    clock.finish(final)
    _outcome(out, res, sub_result)
    out.ended = True
    return out


def _outcome(out, res, sub_result: dict) -> None:
    """How the run ended: the trusted runner's way, unless the submission's process ended
    under it (then that process's way: its limit, its signal, its exit)."""
    out.stopped_early = bool(res.stopped)
    if getattr(res, "setup_error", None):
        out.sandbox_error = f"sandbox setup failed: {res.setup_error}"
    if sub_result.get("error"):
        out.sandbox_error = out.sandbox_error or f"submission sandbox: {sub_result['error']}"
    sub = sub_result.get("res")
    ended = res if res.returncode != EXIT_PEER_GONE or sub is None else sub
    rc = ended.returncode
    out.returncode = rc if rc is None or rc >= 0 else None
    if ended is sub and rc == 0:
        out.returncode = EXIT_PEER_GONE  # it ended while a test waited on it: not a normal end
    out.signal = ended.signal or (-rc if rc is not None and rc < 0 else None)
    out.timed_out, out.memory_exceeded = bool(ended.timed_out), bool(ended.memory_exceeded)
    out.timeout_kind = ended.timeout_kind if ended.timed_out else None
    out.output_exceeded = bool(res.output_exceeded or (sub is not None and ended is sub
                                                        and sub.output_exceeded))
    out.disk_exceeded = bool(getattr(ended, "disk_exceeded", False))
    sub_out = bytes(sub.stdout or b"") + bytes(sub.stderr or b"") if sub is not None else b""
    out.stdout, out.stderr = sub_out + bytes(res.stdout or b""), bytes(res.stderr or b"")
    out.wall_s = float(res.wall_s)
    out.cpu_s = None if res.cpu_s is None else res.cpu_s + (sub.cpu_s or 0.0 if sub else 0.0)
    out.wait_s = res.wait_s
    if out.stopped_early:
        out.timed_out, out.timeout_kind, out.signal, out.returncode = False, None, None, None
    out.layers = dict(getattr(res, "layers", {}) or {})
    out.missing_layers = list(getattr(res, "missing_layers", []) or [])
