"""The call proxy's wiring for one suite run of an imported problem (docs/IMPORTED_GRADING.md):
the handbook's tests in a trusted process, the submission in another, each in a sandbox of its
own (cold, or a fork of the problem's warm zygote: launch.py starts both the same way), joined
by pipes that carry only the call proxy's messages (judge/runner/proxy/, wire.py).

    grader --results pipe--  trusted sandbox: judge_runner --proxy (tests, checker)
      |  \\--cpu? pipes---------/          |  requests / answers
      \\--monitor--  submission sandbox: judge_runner.proxy.serve (the student's module)

The verdict is the trusted runner's event stream, read as for any other run (child_log): the
submission never holds a test, an expected value or the runner's pipe. The submission's CPU time
is measured here, from its sandbox's samples, and told to the trusted side for `time_limit`;
the suite's CPU limits count both processes. When the submission's process ends (a limit, a
crash), the trusted runner stops at once and the run ends as that process did (launch.outcome).
"""

from __future__ import annotations

import fcntl
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from judge.grading.child_env import child_env
from judge.judging.bounded import SCRATCH_FILES, SCRATCH_MB
from judge.runner.proxy.served import ENV as SERVED_ENV
from judge.runner.proxy.shared_tmp import ENV as SHARED_TMP_ENV
from judge.sandbox import probe_layers, scratchfs
from judge.sandbox.forkserver import WarmSetupFailed
from judge.sandbox.limits import MIB
from judge.sandbox.result import SandboxResult, StopReason
from judge.sandbox.run import FIRST_PASSED_FD
from judge.sandbox.usage import Usage

log_ = logging.getLogger("judge")

PIPE_BYTES = 1 << 20     # a big array in flight both ways cannot fill a pipe as easily
SAMPLE_WAIT_S = 1.0
# how often the submission's sandbox is sampled: `time_limit` waits for a sample taken after
# each of its questions (12 of them per suite that uses it, 10 in the calibration), which at
# the watch's 50 ms cost about 1 s a suite run, most of a warm one (tiny-lru's import phase
# 1.0-1.2 s, 0.3-0.4 s at 5 ms); each sample reads a few files of the run's cgroup and /proc
SUB_POLL_S = 0.01
AFTER_TRUSTED_S = 2.0    # the submission's process may take this long to notice the end
SHARED_OWNER = 65534     # nobody: the shared tmp's owner (share_tmp)


def is_proxied(problem) -> bool:
    """Imported from the handbook: its tests run apart from the submission."""
    source = getattr(problem.config, "source", None)
    return source is not None and getattr(source, "format", None) == "handbook" and \
        getattr(problem.config, "language", "python") == "python"  # C++: grading/cpp/


def served_modules(problem) -> list[str]:
    """The runtime modules the trusted side serves to the submission (rpc/served.py): the
    problem's handbook modules but `checker` (each side has its own: the test's is the one
    that judges) and those with an `install()` step (they patch the process they run in)."""
    hb = problem.config.handbook
    return [m for m in hb.modules if m != "checker" and m not in hb.install]


def share_tmp(path: str) -> bool:
    """The folder both processes use as their temporary one (judge/runner/proxy/shared_tmp.py):
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


def unshare_tmp(path: str) -> None:
    try:
        scratchfs.unmount(path)
    except OSError as e:  # detached lazily; the grading folder goes with the view
        log_.warning("could not unmount the shared tmp %s: %s", path, e)


def shared_env(env: dict, shared, problem) -> dict:
    out = {**env, "TMPDIR": str(shared), SHARED_TMP_ENV: str(shared)}
    if names := served_modules(problem):
        out[SERVED_ENV] = ",".join(names)
    return out


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
        # the trusted process's CPU spent serving the submission's requests, as it reports it
        # (judge/runner/proxy/serving.py): not charged to the submission (`served_cpu`)
        self.served = 0.0

    def sample(self, u: Usage) -> None:
        with self.cond:
            if u.cpu_s is not None:
                self.cpu = float(u.cpu_s)
            self.seq += 1
            self.cond.notify_all()

    def end(self) -> None:
        with self.cond:
            self.ended = True
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
                if line.startswith(b"served "):
                    meter.served = _served(line, meter.served)
                    continue
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


def _served(line: bytes, before: float) -> float:
    """The trusted side's report of its serving CPU: a finite number that only grows (the
    trusted process is the tests', but its number is still held to what it can be)."""
    try:
        value = float(line[7:])
    except ValueError:
        return before
    return value if before <= value < 1e9 else before


def served_cpu(cpu_s: float | None, meter: _Meter) -> float:
    """What of the trusted sandbox's CPU time `cpu_s` was spent serving the submission (at
    most all of it)."""
    return min(meter.served, cpu_s) if cpu_s is not None else 0.0


@dataclass
class PeerEnd:
    """How the submission's process ended: its sandbox's result, or why there is none."""
    res: SandboxResult | None = None
    error: str | None = None          # its sandbox failed (the judge's fault)
    setup_failed: str | None = None   # its warm fork failed before anything ran: run it cold


class Link:
    """One try of a proxied run: its pipes, the submission's process on a thread of its own
    (started by `start` with the launcher's spawner), the grader's answers to `cpu?`.

    The runner's ends: `runner_fds`, named to it by `runner_args`; the submission's ends go
    to its process. Each end is closed by the sandbox it is passed to (run_sandboxed and the
    fork server close what they pass), the control pipe's by the answering thread."""

    def __init__(self, shared: Path):
        self.shared = shared
        t2s_r, t2s_w = _pipe()
        s2t_r, s2t_w = _pipe()
        ctl_r, t2g_w = _pipe()
        g2t_r, ctl_w = _pipe()
        st2s_r, st2s_w = _pipe()    # the tests' other threads (judge/runner/proxy/streams.py)
        ss2t_r, ss2t_w = _pipe()
        self.runner_fds = (s2t_r, t2s_w, g2t_r, t2g_w, ss2t_r, st2s_w)
        self._serve_fds = (t2s_r, s2t_w, st2s_r, ss2t_w)
        self._ctl = (ctl_r, ctl_w)
        self.meter = _Meter()
        self._counted = 0.0
        self._done_at: float | None = None
        self._end = PeerEnd()
        self._thread: threading.Thread | None = None

    def runner_args(self) -> list[str]:
        return ["--proxy", ",".join(map(str, self.runner_fds))]

    def counted(self, u: Usage) -> Usage:
        """A sample of the trusted sandbox as the suite's CPU limits count it: with the
        submission's process's CPU time, without the trusted side's serving of it."""
        if u.cpu_s is None:
            return Usage(u.wall_s, None, u.wait_s)
        # less what the trusted side spent serving the submission (reported a little late:
        # the count never goes back), on the CPU clock and on the wall net's alike: the
        # submission's process waited for those answers as for a CPU
        served = served_cpu(u.cpu_s, self.meter)
        self._counted = max(self._counted, u.cpu_s - served + self.meter.cpu)
        return Usage(u.wall_s, self._counted, u.wait_s + served)

    def _watcher(self):
        """The submission sandbox's monitor, sampled every SUB_POLL_S (watch.py)."""
        def monitor(u: Usage):
            return self._monitor(u)
        monitor.poll_s = SUB_POLL_S  # type: ignore[attr-defined]  # (watch.py reads it)
        return monitor

    def _monitor(self, u: Usage):
        self.meter.sample(u)
        if self._done_at is not None and time.monotonic() - self._done_at > AFTER_TRUSTED_S:
            return StopReason.ASKED
        return None

    def start(self, spawn, plan, scratch: Path, limits) -> None:
        """The submission's process, on a thread: `spawn` (run_sandboxed or a warm fork)
        with `limits`, every one a cold run of it gets."""
        problem, view, sub, device = plan.problem, plan.view, plan.submission, plan.device
        t2s_r, s2t_w, st2s_r, ss2t_w = self._serve_fds
        kw = dict(
            argv=[sys.executable, "-P", "-s", "-m", "judge_runner.proxy.serve",
                  "--in-fd", str(t2s_r), "--out-fd", str(s2t_w),
                  "--streams-fds", f"{st2s_r},{ss2t_w}", "--module", problem.module,
                  "--submission", str(sub)],
            ro_binds=[(str(p), str(p)) for p in (view.handbook, view.runner_parent,
                                                 sub.parent)],
            scratch=str(scratch), rw_binds=[(str(self.shared), str(self.shared))],
            env=shared_env(child_env(problem, view, sub.parent, device), self.shared, problem),
            limits=limits, device=device, monitor=self._watcher(), pass_fds=self._serve_fds)
        threading.Thread(target=_answer_cpu, args=(*self._ctl, self.meter), daemon=True).start()
        self._thread = threading.Thread(target=self._serve, args=(spawn, kw), daemon=True,
                                        name=f"sub-{scratch.name}")
        self._thread.start()

    def _serve(self, spawn, kw: dict) -> None:
        try:
            self._end.res = spawn(**kw)
        except WarmSetupFailed as exc:
            self._end.setup_failed = str(exc)
        except Exception as exc:  # the sandbox itself failed: the judge's fault
            self._end.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.meter.end()

    def finish(self, wall_s: float) -> PeerEnd:
        """Once the trusted process has ended: the submission's process is stopped if it has
        not noticed within AFTER_TRUSTED_S, and its end returned."""
        self._done_at = time.monotonic()
        if self._thread is not None:
            self._thread.join(timeout=wall_s + 30)
        return self._end
