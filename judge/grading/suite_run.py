"""Running one suite of one module (a submission or the reference) in a sandboxed child,
following what its runner reports through a pipe and charging its CPU time to its phases while
it runs (clock.py). The pipe, not a file in the scratch folder, so that nothing the submission
writes there can come first or be read as the runner's; the scratch folder is a filesystem of
the run's own (SCRATCH_MB, SCRATCH_FILES) where the host allows one.

A run that only the wall-clock net stopped (it was waiting, or the host starved it of CPU
beyond what the net allows for) is run once more from the start: a verdict must not depend on
the host's load. Whatever the second run does is final.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from judge.config import settings
from judge.grading.results_pump import ResultsPump
from judge.grading.workdir import View
from judge.judging.bounded import SCRATCH_FILES, SCRATCH_MB
from judge.judging.child_log import ChildLog
from judge.judging.clock import PhaseClock, TimeLimits, slept, suite_wall_net
from judge.judging.run_record import RunRecord
from judge.problem import Problem
from judge.runner.install_step import ENV as INSTALL_ENV
from judge.sandbox import Limits, child_pipe, run_sandboxed
from judge.sandbox.usage import Usage

log_ = logging.getLogger("judge")

RESULTS = "results.jsonl"  # the runner's file when run by hand; the judge passes a pipe


# One run of a suite is the judging's run record; the name stays for its readers here.
SuiteRun = RunRecord


@dataclass(frozen=True)
class _Plan:
    """What both attempts of one suite run share."""
    problem: Problem
    view: View
    suite: str
    submission: Path
    targets: list[str]
    limits: TimeLimits
    device: str
    on_events: Callable[[list[dict], RunRecord], None] | None = None
    stop: threading.Event | None = None


def child_env(problem, view: View, sub_dir: Path, device: str) -> dict[str, str]:
    path = os.pathsep.join([str(sub_dir), str(view.handbook), str(view.runner_parent)])
    env = {
        "PYTHONPATH": path, "JUDGE_DEVICE": device, "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PYTHONNOUSERSITE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }
    # A GPU worker pinned to one GPU (one worker per GPU) pins its children to the same one.
    visible = settings().cuda_visible_devices
    if device == "cuda" and visible:
        env["CUDA_VISIBLE_DEVICES"] = visible
    install = getattr(getattr(problem.config, "handbook", None), "install", None)
    if install:  # both processes of an imported problem call these first (runner/install_step.py)
        env[INSTALL_ENV] = ",".join(install)
    return env


def _spawner(problem, device: str):
    """Where a suite run is spawned: a warm zygote's fork (grading/warm_pool.py) where one
    serves this problem, else a cold sandbox."""
    from judge.grading.warm_pool import spawner

    return spawner(problem, device) or run_sandboxed


def run_suite(problem, view: View, *, run: str, suite: str, submission: Path,
              targets: list[str], limits: TimeLimits, device: str,
              on_events: Callable[[list[dict], RunRecord], None] | None = None,
              stop: threading.Event | None = None) -> RunRecord:
    """Runs `targets` (files or node ids in the suite folder) against `submission`.
    `on_events(events, run)` sees the child's well-formed events as they arrive. Once `stop`
    is set (by the caller, typically from `on_events`), the child is ended at the next sample
    and the run is marked `stopped_early`: not a limit, not a crash, and never run again."""
    plan = _Plan(problem, view, suite, submission, targets, limits, device, on_events, stop)
    out = _attempt(plan, run)
    stopped = out.clock.stopped if out.clock is not None else None
    if out.timeout_kind == "wall" and slept(stopped):
        log_.warning("%s %s: stopped by the wall-clock net (phase %s) while it slept: not run "
                     "again", problem.name, run, stopped.phase)
    elif out.timeout_kind == "wall":
        log_.warning("%s %s: stopped by the wall-clock net (phase %s); running it again",
                     problem.name, run, stopped.phase if stopped else "?")
        if limits.wall_cap_s is not None:  # the second run draws on the same grading's clock
            spent = out.wall_s - (out.wait_s or 0.0)
            plan = replace(plan, limits=replace(limits, wall_cap_s=max(
                1.0, limits.wall_cap_s - spent)))
        out = _attempt(plan, f"{run}-again")
        out.attempts = 2
    return out


def _attempt(plan: _Plan, run: str) -> RunRecord:
    problem, view, suite, submission = plan.problem, plan.view, plan.suite, plan.submission
    limits, on_events, stop = plan.limits, plan.on_events, plan.stop
    from judge.grading import proxied

    if proxied.is_proxied(problem):  # the tests apart from the submission (IMPORTED_GRADING.md)
        return proxied.attempt(problem, view, run, suite, submission, plan.targets, limits,
                               plan.device, on_events, stop)
    lim = problem.limits
    conf, scratch = view.run_dirs(run, dict(limits.tests))
    suite_dir = view.tests[suite]
    results_r, results_w = child_pipe()
    argv = [sys.executable, "-P", "-s", "-m", "judge_runner",
            "--results-fd", str(results_w), "--module", problem.module,
            "--submission", str(submission),
            "--suite-dir", str(suite_dir), "--limits", str(conf / "limits.json"),
            "--default-limit", f"{limits.default_s:.3f}",
            "--import-limit", f"{limits.import_s:.3f}", *plan.targets]
    binds = [(p, p) for p in (view.handbook, view.runner_parent, submission.parent,
                              suite_dir, conf)]
    box = Limits(wall_s=suite_wall_net(lim), cpu_s=lim.cpu_s, memory_mb=lim.memory_mb,
                 processes=64, file_size_mb=64, open_files=256,
                 output_bytes=lim.output_kb * 1024, scratch_mb=SCRATCH_MB,
                 scratch_files=SCRATCH_FILES)
    clock = PhaseClock(limits)
    out = RunRecord(suite=suite, log=ChildLog(), spawn_t=time.time(), clock=clock)
    results = ResultsPump(out, clock, on_events, stop)

    def spawn(how, r: int, w: int):
        args = [str(w) if i and argv[i - 1] == "--results-fd" else str(a)
                for i, a in enumerate(argv)]
        return how(argv=args, ro_binds=[(str(a), str(b)) for a, b in binds],
                   scratch=str(scratch),
                   env=child_env(problem, view, submission.parent, plan.device),
                   limits=box, device=plan.device, monitor=results.monitor, pass_fds=(w,),
                   readers={r: results.take})

    from judge.grading.warm_pool import WarmSetupFailed

    try:
        try:
            res = spawn(_spawner(problem, plan.device), results_r, results_w)
        except WarmSetupFailed:  # nothing of it ran: the same run cold, on a pipe of its own
            os.close(results_r)
            results_r, results_w = child_pipe()
            res = spawn(run_sandboxed, results_r, results_w)
    except Exception as exc:  # the sandbox itself failed: the judge's fault
        out.sandbox_error = f"{type(exc).__name__}: {exc}"
        out.wall_s = time.time() - out.spawn_t
        results.pump(clock.last)
        out.ended = True
        return out
    finally:
        os.close(results_r)
    last = clock.last
    final = Usage(float(res.wall_s), res.cpu_s if res.cpu_s is not None else last.cpu_s,
                  res.wait_s if res.wait_s is not None else last.wait_s)
    results.pump(final)
    clock.finish(final)
    if res.setup_error:
        out.sandbox_error = f"sandbox setup failed: {res.setup_error}"
    out.stdout, out.stderr = bytes(res.stdout or b""), bytes(res.stderr or b"")
    out.wall_s = float(res.wall_s)
    out.cpu_s, out.wait_s = res.cpu_s, res.wait_s
    out.max_memory_bytes = getattr(res, "max_memory_bytes", None)
    out.layers, out.missing_layers = dict(res.layers), list(res.missing_layers)
    out.stopped_early = res.stopped
    if not res.stopped:  # when the kill was ours, no limit was reached and nothing crashed
        rc = res.returncode
        out.returncode = rc if rc is None or rc >= 0 else None
        out.signal = res.signal or (-rc if rc is not None and rc < 0 else None)
        out.timed_out, out.memory_exceeded = res.timed_out, res.memory_exceeded
        out.timeout_kind = res.timeout_kind if res.timed_out else None
        out.output_exceeded, out.disk_exceeded = res.output_exceeded, res.disk_exceeded
    out.ended = True
    return out
