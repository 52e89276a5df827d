"""Every known submission (accepted and wrong_answer) of a problem, graded once per test session
on each path that two issue-19 tests compare, so that neither grades again what the other has:

    "cold"     a cold sandbox per run, unsharded (JUDGE_SHARDS unset: auto is 1 when cold)
    "warm"     forks of the warm zygote, unsharded (JUDGE_SHARDS=1)
    "sharded"  forks of the warm zygote, the hidden suite as 2 shards (JUDGE_SHARDS=2, on a
               2-core split with one grading slot, whatever the host has)

tests/grading/test_warm_same_verdicts.py compares "cold" with both warm paths (on a 2-core
host its warm grading was the sharded one, JUDGE_SHARDS being auto there; on one core the
unsharded one); tests/grading/test_hidden_shards.py compares "warm" with "sharded". Each used
to grade its own pair, so every file was graded warm twice over on the same configuration.

Each entry keeps what the tests check besides the report: the events it emitted, how many of
its runs meant to be warm fell back to cold (warm_pool.fallbacks), and how many hidden suites it
merged from shards or ran again unsharded (shards.stats). Those counters are process-wide, so a
grading is counted on its own, one at a time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from judge.grading import shards, warm_pool
from judge.grading.grader import grade
from judge.judging.report import Report

PATHS = {"cold": (False, None), "warm": (True, "1"), "sharded": (True, "2")}


@dataclass(frozen=True)
class Graded:
    report: Report
    events: list[dict]
    fallbacks: int  # runs meant to be warm that ran cold
    merged: int     # hidden suites merged from shards
    unsharded: int  # hidden suites whose shards were dropped and run again unsharded


_done: dict[tuple[str, str, str, str], Graded] = {}
_lock = threading.Lock()


def known_files(problem) -> list[Path]:
    return problem.submissions("accepted") + problem.submissions("wrong_answer")


def graded(problem, path: Path, how: str) -> Graded:
    """`path` (one of known_files(problem)) graded on path `how`, once per session."""
    key = (problem.name, problem.version, str(path), how)
    with _lock:
        if key not in _done:
            _done[key] = _grade(problem, path.read_text(encoding="utf-8"), how)
        return _done[key]


def _grade(problem, source: str, how: str) -> Graded:
    warm, n = PATHS[how]
    events: list[dict] = []
    with pytest.MonkeyPatch.context() as mp:
        if n is None:
            mp.delenv("JUDGE_SHARDS", raising=False)
        else:
            mp.setenv("JUDGE_SHARDS", n)
        mp.setattr(shards, "cores", lambda: 2)  # the same split on any host
        mp.setattr(shards, "_slots", [1])
        fell, before = warm_pool.fallbacks(), dict(shards.stats)
        with warm_pool.forced(warm):
            report = grade(problem, source, device="cpu", on_event=events.append)
        return Graded(report, events, warm_pool.fallbacks() - fell,
                      shards.stats["merged"] - before["merged"],
                      shards.stats["unsharded"] - before["unsharded"])
