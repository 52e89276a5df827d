"""One attempt of one suite run: the one launcher of every run a grading makes, native or
imported (proxied), warm or cold.

    attempt(plan, run) -> RunRecord

A native problem's run is one sandboxed process, the runner (tests and submission in it). An
imported problem's is two (docs/IMPORTED_GRADING.md): the runner as the trusted test process
and, on a thread beside it, the submission's process (proxied.Link wires them). Each process
is started by the same spawner: a fork of the problem's warm zygote where one serves it
(grading/warm_pool.py), else run_sandboxed; either way with every limit a cold run gets
before its first byte runs (docs/SANDBOX.md, section 6). A warm fork whose setup failed ran
nothing of the submission: the whole attempt is made again cold, on descriptors of its own.

The runner's results pipe is read as the run goes (results_pump.py); once the run has ended its
sandbox's result (and the submission process's) is copied into the record once (`outcome`).
Nothing here imports its callers (suite_run.py) or is imported by the proxy's wiring.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from judge.grading import proxied, warm_pool
from judge.grading.child_env import child_env
from judge.grading.results_pump import ResultsPump
from judge.grading.workdir import View
from judge.judging.bounded import SCRATCH_FILES, SCRATCH_MB
from judge.judging.child_log import ChildLog
from judge.judging.clock import PhaseClock, TimeLimits, suite_wall_net
from judge.judging.run_record import RunRecord
from judge.problem import Problem
from judge.runner.proxy.trusted import EXIT_PEER_GONE
from judge.sandbox import Limits, child_pipe, run_sandboxed
from judge.sandbox.forkserver import WarmSetupFailed
from judge.sandbox.layers import SECURITY_LAYERS
from judge.sandbox.result import SandboxResult
from judge.sandbox.usage import Usage


@dataclass(frozen=True)
class Plan:
    """What every attempt of one suite run shares."""
    problem: Problem
    view: View
    suite: str
    submission: Path
    targets: list[str]
    limits: TimeLimits
    device: str
    on_events: Callable[[list[dict], RunRecord], None] | None = None
    stop: threading.Event | None = None
    share: int = 1  # one of `share` shards: it gets that part of one run's filesystems


@dataclass(frozen=True)
class _Dirs:
    """The run's folders, made once for all its tries: the runner's config and scratch, and
    for an imported problem the submission's scratch and the folder both processes share."""
    conf: Path
    scratch: Path
    sub_scratch: Path | None = None
    shared: Path | None = None
    shared_fs: bool = False


def attempt(plan: Plan, run: str) -> RunRecord:
    dirs = _make_dirs(plan, run)
    try:
        try:
            return _try(plan, dirs, warm_pool.spawner(plan.problem, plan.device, run_sandboxed))
        except WarmSetupFailed:  # nothing of it ran, but its descriptors are gone: again, cold
            return _try(plan, dirs, run_sandboxed)
    finally:
        if dirs.shared_fs:
            proxied.unshare_tmp(str(dirs.shared))


def _make_dirs(plan: Plan, run: str) -> _Dirs:
    conf, scratch = plan.view.run_dirs(run, dict(plan.limits.tests))
    if not proxied.is_proxied(plan.problem):
        return _Dirs(conf, scratch)
    _, sub_scratch = plan.view.run_dirs(f"{run}-sub", {})
    _, shared = plan.view.run_dirs(f"{run}-tmp", {})
    return _Dirs(conf, scratch, sub_scratch, shared, proxied.share_tmp(str(shared)))


def _box(plan: Plan) -> Limits:
    """The limits of each process of the run (a proxied run's two get the same)."""
    lim = plan.problem.limits
    return Limits(wall_s=suite_wall_net(lim), cpu_s=lim.cpu_s, memory_mb=lim.memory_mb,
                  processes=64, file_size_mb=64, open_files=256,
                  output_bytes=lim.output_kb * 1024, scratch_mb=SCRATCH_MB // plan.share,
                  scratch_files=SCRATCH_FILES // plan.share,
                  tmp_mb=Limits.tmp_mb // plan.share)


def _runner(plan: Plan, dirs: _Dirs, results_w: int, link: proxied.Link | None) -> dict:
    """The runner's sandbox, as run_sandboxed's keywords: beside the tests, the submission
    (native) or the proxy's ends and the shared folder (proxied: it never mounts the file)."""
    problem, view, sub = plan.problem, plan.view, plan.submission
    suite_dir = plan.view.tests[plan.suite]
    argv = [sys.executable, "-P", "-s", "-m", "judge_runner",
            "--results-fd", str(results_w), "--module", problem.module,
            "--submission", str(sub), *(link.runner_args() if link else []),
            "--suite-dir", str(suite_dir), "--limits", str(dirs.conf / "limits.json"),
            "--default-limit", f"{plan.limits.default_s:.3f}",
            "--import-limit", f"{plan.limits.import_s:.3f}", *plan.targets]
    binds = [view.handbook, view.runner_parent, *([] if link else [sub.parent]), suite_dir,
             dirs.conf]
    kw = dict(argv=argv, ro_binds=[(str(p), str(p)) for p in binds], scratch=str(dirs.scratch),
              pass_fds=(results_w, *(link.runner_fds if link else ())))
    if link is None:
        return dict(kw, env=child_env(problem, view, sub.parent, plan.device))
    env = proxied.shared_env(child_env(problem, view, view.handbook, plan.device), dirs.shared,
                             problem)
    return dict(kw, env=env, rw_binds=[(str(dirs.shared), str(dirs.shared))])


def _try(plan: Plan, dirs: _Dirs, spawn) -> RunRecord:
    """One try: raises WarmSetupFailed when a warm fork of it failed before anything ran."""
    box = _box(plan)
    results_r, results_w = child_pipe()
    link = proxied.Link(dirs.shared) if dirs.shared is not None else None
    clock = PhaseClock(plan.limits)
    out = RunRecord(suite=plan.suite, log=ChildLog(), spawn_t=time.time(), clock=clock)
    counted = link.counted if link else (lambda u: u)
    results = ResultsPump(out, clock, plan.on_events, plan.stop, usage=counted)
    runner = _runner(plan, dirs, results_w, link)
    if link is not None:
        assert dirs.sub_scratch is not None  # an imported run's folders have it
        link.start(spawn, plan, dirs.sub_scratch, box)
    res, error, peer = None, None, None
    try:
        res = spawn(**runner, limits=box, device=plan.device, monitor=results.monitor,
                    readers={results_r: results.take})
    except WarmSetupFailed:
        raise
    except Exception as exc:  # the sandbox itself failed: the judge's fault
        error = f"{type(exc).__name__}: {exc}"
    finally:
        os.close(results_r)
        if link is not None:
            peer = link.finish(box.wall_s)
    if peer is not None and peer.setup_failed:
        raise WarmSetupFailed(peer.setup_failed)
    return _ended(out, results, clock, counted, res, error, peer)


def _ended(out: RunRecord, results: ResultsPump, clock: PhaseClock, counted, res, error,
           peer) -> RunRecord:
    """The last of the results pipe fed to the log and the clock, then the run's end."""
    if res is None:
        out.sandbox_error = error
        out.wall_s = time.time() - out.spawn_t
        results.pump(clock.last)
        out.ended = True
        return out
    last = clock.last
    final = counted(Usage(float(res.wall_s), res.cpu_s if res.cpu_s is not None else last.cpu_s,
                          res.wait_s if res.wait_s is not None else last.wait_s))
    results.pump(final)
    clock.finish(final)
    outcome(out, res, peer)
    out.ended = True
    return out


def outcome(out: RunRecord, res: SandboxResult, peer: proxied.PeerEnd | None = None) -> None:
    """How the run ended, copied into the record once: the runner's way, unless the
    submission's process of a proxied run ended under it (the runner then exits
    EXIT_PEER_GONE at once, and the run ends as that process did: its limit, its signal, its
    exit). When the kill was ours (`stopped`), no limit was reached and nothing crashed."""
    sub = peer.res if peer is not None else None
    ended = sub if sub is not None and res.returncode == EXIT_PEER_GONE else res
    out.stopped_early = bool(res.stopped)
    out.sandbox_error = _sandbox_error(res, peer)
    if not out.stopped_early:
        rc = ended.returncode
        out.returncode = rc if rc is None or rc >= 0 else None
        if ended is sub and rc == 0:  # it ended while a test waited on it: not a normal end
            out.returncode = EXIT_PEER_GONE
        out.signal = ended.signal or (-rc if rc is not None and rc < 0 else None)
        out.timed_out, out.memory_exceeded = bool(ended.timed_out), bool(ended.memory_exceeded)
        out.timeout_kind = ended.timeout_kind if ended.timed_out else None
        out.output_exceeded = bool(res.output_exceeded or ended.output_exceeded)
        out.disk_exceeded = bool(ended.disk_exceeded)
    # what the submission's process printed comes first: the runner's own lines end the tail
    sub_out = bytes(sub.stdout or b"") + bytes(sub.stderr or b"") if sub is not None else b""
    out.stdout, out.stderr = sub_out + bytes(res.stdout or b""), bytes(res.stderr or b"")
    out.wall_s, out.wait_s = float(res.wall_s), res.wait_s
    out.cpu_s = None if res.cpu_s is None else res.cpu_s + (sub.cpu_s or 0.0 if sub else 0.0)
    peaks = [r.max_memory_bytes for r in (res, sub) if r is not None and r.max_memory_bytes]
    out.max_memory_bytes = max(peaks, default=None)
    out.layers, out.missing_layers = _layers(res, sub)


def _sandbox_error(res: SandboxResult, peer: proxied.PeerEnd | None) -> str | None:
    if res.setup_error:
        return f"sandbox setup failed: {res.setup_error}"
    if peer is not None and peer.error:
        return f"submission sandbox: {peer.error}"
    return None  # (a warm fork's setup error is WarmSetupFailed: that try is made again)


def _layers(res: SandboxResult, sub: SandboxResult | None) -> tuple[dict, list]:
    """The run's layers: the runner's, less any the submission's process lacked (the
    weaker sandbox is the run's). `grader_path` "warm" only when both were warm forks."""
    layers, missing = dict(res.layers or {}), list(res.missing_layers or [])
    if sub is None:
        return layers, missing
    theirs = dict(sub.layers or {})
    for k in SECURITY_LAYERS:
        if not theirs.get(k) and layers.get(k):
            layers[k] = theirs.get(k, False)
    missing += [k for k in sub.missing_layers or [] if k not in missing]
    if theirs.get("grader_path") != layers.get("grader_path"):
        layers.pop("grader_path", None)
    return layers, missing
