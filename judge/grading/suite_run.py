"""Running one suite of one module (a submission or the reference) in a sandboxed child,
following what its runner reports through a pipe and charging its CPU time to its phases while
it runs (clock.py). The pipe, not a file in the scratch folder, so that nothing the submission
writes there can come first or be read as the runner's; the scratch folder is a filesystem of
the run's own (SCRATCH_MB, SCRATCH_FILES) where the host allows one. Each attempt is started
by launch.py, the one launcher of native and imported, warm and cold runs.

A run that only the wall-clock net stopped (it was waiting, or the host starved it of CPU
beyond what the net allows for) is run once more from the start: a verdict must not depend on
the host's load. Whatever the second run does is final.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from pathlib import Path
from typing import Callable

from judge.grading.launch import Plan, attempt
from judge.grading.workdir import View
from judge.judging.clock import TimeLimits, slept
from judge.judging.run_record import RunRecord

log_ = logging.getLogger("judge")

RESULTS = "results.jsonl"  # the runner's file when run by hand; the judge passes a pipe


# One run of a suite is the judging's run record; the name stays for its readers here.
SuiteRun = RunRecord


def run_suite(problem, view: View, *, run: str, suite: str, submission: Path,
              targets: list[str], limits: TimeLimits, device: str,
              on_events: Callable[[list[dict], RunRecord], None] | None = None,
              stop: threading.Event | None = None, share: int = 1) -> RunRecord:
    """Runs `targets` (files or node ids in the suite folder) against `submission`.
    `on_events(events, run)` sees the child's well-formed events as they arrive. Once `stop`
    is set (by the caller, typically from `on_events`), the child is ended at the next sample
    and the run is marked `stopped_early`: not a limit, not a crash, and never run again.
    `share`: this run is one of that many shards of one suite (shards.py): its scratch and
    /tmp filesystems are that part of one run's, so shards that fit fit one run together."""
    plan = Plan(problem, view, suite, submission, targets, limits, device, on_events, stop,
                share)
    out = attempt(plan, run)
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
        out = attempt(plan, f"{run}-again")
        out.attempts = 2
    return out
