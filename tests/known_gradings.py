"""Every known submission (accepted and wrong_answer) of a problem, graded once per test session
on each path that two issue-19 tests compare, so that neither grades again what the other has:

    "cold"     a cold sandbox per run, unsharded (auto is 1 shard when cold)
    "warm"     forks of the warm zygote, unsharded (JUDGE_SHARDS=1)
    "sharded"  forks of the warm zygote, the hidden suite as 2 shards (JUDGE_SHARDS=2, on a
               2-core split with one grading slot, whatever the host has): the accepted files
               and every third wrong one only (`sharded_files`). A merge of shards does not
               look at what a file gets wrong, and each sharded grading takes both cores: all
               63 files were a fifth of the suite's CPU with the other two paths

Each is graded with the hidden tests' details shown, as `judge check` grades.
tests/authoring/test_bank_proves_itself.py checks the bank with the "cold" ones;
tests/grading/test_warm_same_verdicts.py compares "cold" with both warm paths (on a 2-core
host its warm grading was the sharded one, JUDGE_SHARDS being auto there; on one core the
unsharded one); tests/grading/test_hidden_shards.py compares "warm" with "sharded". Each used
to grade its own pair, so every file was graded warm twice over on the same configuration.

A problem's files are graded on all three paths at the first ask, whichever test asks: its
cold and unsharded warm gradings two at a time (each mostly one sandboxed child: two share the
2 cores CI has), then the sharded ones one at a time (they use both cores, and JUDGE_SHARDS,
which says how many shards, is the whole process's: a cold grading beside them would be
sharded too). While the cold and unsharded warm gradings run, JUDGE_SHARDS=1 for all of them:
a cold grading is unsharded with it as without it.

Each entry keeps what the tests check besides the report: the events it emitted, how many
runs meant to be warm fell back to cold while it ran (warm_pool.fallbacks is process-wide: a
fallback in a warm grading is counted in its own entry, and may be in the entry of a warm
grading beside it too; a cold grading never falls back), and how many hidden suites it merged
from shards or ran again unsharded (shards.stats: counted around each sharded grading, one at
a time; an unsharded grading changes neither).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from judge.grading import shards, warm_pool
from judge.grading.grader import grade
from judge.judging.report import Report

PATHS = ("cold", "warm", "sharded")


@dataclass(frozen=True)
class Graded:
    report: Report
    events: list[dict]
    fallbacks: int | None  # runs meant to be warm that ran cold (None: a cold grading)
    merged: int | None     # hidden suites merged from shards (None: an unsharded grading)
    unsharded: int | None  # hidden suites whose shards were dropped and run again unsharded


_done: dict[tuple[str, str], dict[tuple[str, str], Graded]] = {}
_lock = threading.Lock()


def known_files(problem) -> list[Path]:
    return problem.submissions("accepted") + problem.submissions("wrong_answer")


def sharded_files(problem) -> list[Path]:
    """The known files graded on the "sharded" path too."""
    return problem.submissions("accepted") + problem.submissions("wrong_answer")[::3]


def graded(problem, path: Path, how: str) -> Graded:
    """`path` (one of known_files(problem); of sharded_files for "sharded") graded on path
    `how` (one of PATHS)."""
    assert how in PATHS, how
    with _lock:
        key = (problem.name, problem.version)
        if key not in _done:
            _done[key] = _grade_all(problem)
        return _done[key][(str(path), how)]


def _grade_all(problem) -> dict[tuple[str, str], Graded]:
    files = known_files(problem)
    out: dict[tuple[str, str], Graded] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(shards, "cores", lambda: 2)  # the same split on any host
        mp.setattr(shards, "_slots", [1])
        mp.setenv("JUDGE_SHARDS", "1")
        with ThreadPoolExecutor(2, thread_name_prefix="known") as pool:
            jobs = {(str(f), how): pool.submit(_unsharded, problem, f, how)
                    for f in files for how in ("cold", "warm")}
            out.update((k, j.result()) for k, j in jobs.items())
        mp.setenv("JUDGE_SHARDS", "2")
        for f in sharded_files(problem):
            fell, before = warm_pool.fallbacks(), dict(shards.stats)
            report, events = _grade(problem, f, warm=True)
            out[(str(f), "sharded")] = Graded(
                report, events, warm_pool.fallbacks() - fell,
                shards.stats["merged"] - before["merged"],
                shards.stats["unsharded"] - before["unsharded"])
    return out


def _unsharded(problem, path: Path, how: str) -> Graded:
    fell = warm_pool.fallbacks()
    report, events = _grade(problem, path, warm=how == "warm")
    return Graded(report, events, warm_pool.fallbacks() - fell if how == "warm" else None,
                  None, None)


def _grade(problem, path: Path, *, warm: bool) -> tuple[Report, list[dict]]:
    events: list[dict] = []
    with warm_pool.forced(warm):  # a context variable: this thread's own
        # as `judge check` sees them (a hidden test's kind of failure shown): the bank's proof
        # (tests/authoring/test_bank_proves_itself.py) reads the same cold gradings
        report = grade(problem, path.read_text(encoding="utf-8"), device="cpu",
                       on_event=events.append, reveal_hidden=True)
    return report, events
