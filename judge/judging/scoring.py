"""What a grade's score counts, and what a report may say about how a suite ran.

Public tests are for practice. The reference's observations for them are served to every
browser (the page runs them), so a file that replays those values passes every public test
without solving anything. A problem with hidden tests is therefore scored on its hidden tests
alone; one without hidden tests keeps scoring its public ones. The verdict still looks at every
test: AC means all of them passed. The report names the suites that count (`scored_suites`).

A problem imported from the handbook is different: the handbook tests some behaviour only in
its examples (test_example*), so scoring the hidden suite alone gave a file that fails an
example "WA, score 100%". There the examples count as well (`examples_count`); what a replay
of the public observations gains is the examples' share, which the statement prints anyway.

A run of the hidden suite is the submission's only chance to read the hidden tests, so nothing
about it the submission can shape leaves in a student's report: not its duration, not its phase
timings (they stay in the judge's log, for instructors).
"""

from __future__ import annotations

import logging

log = logging.getLogger("judge")


def scored_suites(suites, *, examples_count: bool = False) -> tuple[str, ...]:
    """The suites whose tests make the score, of those graded; `examples_count` for a problem
    imported from the handbook (its public tests are part of what is graded)."""
    suites = tuple(suites)
    if examples_count:
        return suites
    return ("hidden",) if "hidden" in suites else suites


def score_of(tests, suites) -> float:
    """Weights of the passed tests over all weights, among the counted tests of `suites`."""
    counted = [t for t in tests if t.verdict.counts and t.suite in suites]
    total = sum(t.weight for t in counted)
    return sum(t.weight for t in counted if t.verdict.passed) / total if total else 0.0


def suite_timings(run) -> dict:
    """The phases of one run, as the report shows them for a suite it may talk about."""
    return {"start_s": _r(run.start_s), "import_s": _bounded(run.log.import_s, run),
            "tests_s": _bounded((run.log.finished or {}).get("tests_s"), run),
            "cpu_s": _r(run.cpu_s), "cpu_wait_s": _r(run.wait_s), "runs": run.attempts}


def log_hidden_timings(problem_name: str, suite: str, run) -> None:
    log.info("%s %s suite ran %.2fs: %s", problem_name, suite, run.wall_s, suite_timings(run))


def _bounded(x, run):
    """The child's own figure, kept within what the whole run took."""
    return None if x is None else _r(min(max(0.0, float(x)), float(run.wall_s or 0.0)))


def _r(x):
    return None if x is None else round(float(x), 4)
