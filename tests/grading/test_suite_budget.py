"""Issue 10, item 10: an endless loop in every test held a grader for every test's limit in
turn (78 s for 21 tests in the issue; 173.6 s for problem 143 here, whose reference grades in
~19 s on this busy host). A suite now has a CPU budget, twice the reference's CPU time for the
same tests plus the per-test minimum: the run is stopped when it is spent, the test it was in
is TLE and the tests not reached are NR."""

from __future__ import annotations

import time

import pytest

from judge.judging.clock import GRACE_S, SUITE_FACTOR, PhaseClock, TimeLimits
from judge.problem import LimitsConfig
from judge.sandbox.usage import Usage

from grading.test_grade_end_to_end import REFERENCE, run

pytestmark = pytest.mark.usefixtures("sandbox_path")  # cold and warm (tests/sandbox_paths.py)

SPIN = REFERENCE + '''
def _spin(self, *args):
    while True:
        pass
LRUCache.get = LRUCache.put = _spin
'''


def test_the_budget_comes_from_the_references_cpu_time():
    lim = LimitsConfig(min_test_s=5.0, time_factor=4.0)
    ref_suite = {"import_s": 0.5, "gap_s": 2.0}
    ref_tests = {"hidden/t.py::test_a": {"time_s": 1.0}, "hidden/t.py::test_b": {"time_s": 0.5}}
    limits = TimeLimits.from_reference(lim, ref_suite, ref_tests)
    assert limits.budget_s == SUITE_FACTOR * (0.5 + 2.0 + 1.0 + 0.5) + 5.0
    assert TimeLimits.unlimited(lim).budget_s is None  # the reference's own run


def test_the_clock_stops_a_run_past_its_budget_whatever_the_phases():
    limits = TimeLimits({"t.py::test_a": 100.0}, 100.0, 100.0, 100.0, budget_s=3.0)
    clock = PhaseClock(limits)
    clock.check(Usage(0.1, 1.0))
    clock.event({"ev": "start"}, Usage(0.2, 1.0))  # the budget counts from the runner's start
    clock.event({"ev": "test_started", "test": "t.py::test_a"}, Usage(0.3, 1.5))
    assert clock.check(Usage(1.0, 1.0 + 3.0 + GRACE_S - 0.1)) is None
    assert clock.check(Usage(2.0, 1.0 + 3.0 + GRACE_S + 0.1)) == "cpu"
    assert clock.stopped.kind == "budget" and clock.stopped.phase == "t.py::test_a"


def test_an_endless_loop_everywhere_costs_the_budget_not_every_limit(problem, cache, monkeypatch):
    # Measured as the parent measured each run: CPU time and time spent waiting for a CPU. On a
    # busy machine the wall time of a CPU-bound run stretches with the load; those two do not.
    from judge.grading import grader

    runs = []

    def recorded(*args, **kw):
        runs.append(record := real(*args, **kw))
        return record

    real = grader.run_suite
    monkeypatch.setattr(grader, "run_suite", recorded)

    def cost(source):
        runs.clear()
        t = time.perf_counter()
        out = run(problem, cache, source)
        wall = time.perf_counter() - t
        busy = sum(max(0.0, r.wall_s - (r.wait_s or 0.0)) for r in runs)
        return out, wall, busy, sum(r.wall_s for r in runs)

    _, ref_wall, ref_busy, _ = cost(REFERENCE)
    (_, d), spin_wall, spin_busy, spin_runs = cost(SPIN)
    print(f"\nreference: {ref_wall:.1f} s wall, {ref_busy:.1f} s not waiting; endless loops: "
          f"{spin_wall:.1f} s wall, {spin_runs:.1f} s in runs, {spin_busy:.1f} s not waiting for a CPU")
    hidden = [t for t in d["tests"] if t["suite"] == "hidden"]
    # TLE then NR in the judge's log: a failed hidden test shows one word (concealed.py)
    assert d["verdict"] == "TLE" and {(t["verdict"], t["failure"]["kind"]) for t in hidden} \
        == {("WA", "failed")}, hidden
    nr = [t for t in d["tests"] if t["verdict"] == "NR" and t["suite"] == "public"]
    assert all("budget" in t["failure"]["message"] for t in nr)
    assert spin_busy < ref_busy + 15  # the suites' budgets, not 21 limits in turn
