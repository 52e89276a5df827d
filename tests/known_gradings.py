"""Every known submission (accepted and wrong_answer) of a problem, graded once per test session
on each path that the issue-19 tests compare, so that none grades again what another has:

    "warm"     forks of the warm zygote, unsharded (JUDGE_SHARDS=1): every known file, the path
               `judge check` takes (it grades warm by default, warm_pool.use_by_default)
    "cold"     a cold sandbox per run, unsharded (auto is 1 shard when cold)
    "sharded"  forks of the warm zygote, the hidden suite as 2 shards (JUDGE_SHARDS=2, on a
               2-core split with one grading slot, whatever the host has)

"cold" and "sharded" are graded for `compared_files` only: the first accepted file and every
sixth wrong one (every accepted file and every third wrong one before: twice the gradings).
What they are compared for is the mechanism (a fork grades as a fresh sandbox does, a merge
of shards as one suite does), which does not look at what a file gets wrong; grading every
wrong file on all three paths made the known gradings the suite's heaviest part (about a
fifth of its CPU with the sharded path alone, before that was sampled too).

Each is graded with the hidden tests' details shown, as `judge check` grades.
tests/authoring/test_bank_proves_itself.py checks the bank with the "warm" ones;
tests/grading/test_warm_same_verdicts.py compares "cold" with both warm paths;
tests/grading/test_hidden_shards.py compares "warm" with "sharded".

A problem's files are graded on all three paths at the first ask, whichever test asks: its
unsharded warm and cold gradings two at a time (each mostly one sandboxed child: two share the
2 cores CI has), then the sharded ones one at a time (they use both cores, and JUDGE_SHARDS,
which says how many shards, is the whole process's: a cold grading beside them would be
sharded too). While the unsharded gradings run, JUDGE_SHARDS=1 for all of them: a cold grading
is unsharded with it as without it.

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

PATHS = ("warm", "cold", "sharded")


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


def compared_files(problem) -> list[Path]:
    """The known files graded on the "cold" and "sharded" paths too."""
    return problem.submissions("accepted")[:1] + problem.submissions("wrong_answer")[::6]


def graded(problem, path: Path, how: str) -> Graded:
    """`path` (one of known_files(problem); of compared_files for "cold" and "sharded")
    graded on path `how` (one of PATHS)."""
    assert how in PATHS, how
    with _lock:
        key = (problem.name, problem.version)
        if key not in _done:
            _done[key] = _grade_all(problem)
        return _done[key][(str(path), how)]


def _grade_all(problem) -> dict[tuple[str, str], Graded]:
    files, compared = known_files(problem), set(compared_files(problem))
    out: dict[tuple[str, str], Graded] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(shards, "cores", lambda: 2)  # the same split on any host
        mp.setattr(shards, "_slots", [1])
        mp.setenv("JUDGE_SHARDS", "1")
        with ThreadPoolExecutor(2, thread_name_prefix="known") as pool:
            jobs = {(str(f), how): pool.submit(_unsharded, problem, f, how)
                    for f in files for how in ("warm", "cold") if how == "warm" or f in compared}
            out.update((k, j.result()) for k, j in jobs.items())
        mp.setenv("JUDGE_SHARDS", "2")
        for f in compared_files(problem):
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
