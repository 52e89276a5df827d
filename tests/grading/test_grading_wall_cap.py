"""Issue 20, item 2: one submission held a grader for 24 minutes on 2 s of CPU. Every phase
slept just under its wall-clock net, forged in-order tests added phases until the suite's net
tripped, and that net made the run go again from the start.

Contained: a whole grading's wall clock (less waiting for a CPU) is capped by its suites' CPU
budgets plus WALL_ALLOWANCE_S; a run the cap stops, or one the wall net stopped while it
slept, is not run again; the report says so in the test's message.
"""

from __future__ import annotations

import time

import pytest

from judge.judging import clock
from judge.judging.clock import PhaseClock, PhaseUse, Stop, TimeLimits, grading_cap, slept
from judge.sandbox.usage import Usage

from grading.test_grade_end_to_end import REFERENCE, run

pytestmark = pytest.mark.usefixtures("sandbox_path")  # cold and warm (tests/sandbox_paths.py)

# every get sleeps just under the per-phase wall net (3 x (3 s + 1.5 s) for this fixture)
SLEEPER = REFERENCE + '''
import time as _t
_get = LRUCache.get
def get(self, key):
    _t.sleep(12)
    return _get(self, key)
LRUCache.get = get
'''


def test_the_cap_stops_a_run_and_asks_for_no_second_one():
    limits = TimeLimits({"t.py::a": 100.0}, 100.0, 100.0, 100.0, budget_s=50.0, wall_cap_s=5.0)
    c = PhaseClock(limits)
    c.event({"ev": "start"}, Usage(0.1, 0.0))
    c.event({"ev": "test_started", "test": "t.py::a"}, Usage(0.2, 0.0))
    assert c.check(Usage(4.9, 0.0)) is None
    assert c.check(Usage(6.0, 0.1, wait_s=2.0)) is None  # waiting for a CPU is not counted
    assert c.check(Usage(7.5, 0.1, wait_s=2.0)) == "cpu"  # "cpu": never the rerun's "wall"
    assert c.stopped.kind == "cap" and c.stopped.phase == "t.py::a"


def test_a_phase_the_wall_net_stopped_while_it_slept_slept():
    asleep = Stop("t.py::a", "wall", PhaseUse(cpu_s=0.05, wall_s=14.0, waited_s=0.0), 3.0)
    busy = Stop("t.py::a", "wall", PhaseUse(cpu_s=4.0, wall_s=14.0, waited_s=0.0), 3.0)
    assert slept(asleep) and not slept(busy)
    assert not slept(Stop("t.py::a", "cpu", asleep.used, 3.0)) and not slept(None)


def test_the_cap_is_the_budgets_plus_a_bounded_allowance():
    a = TimeLimits({}, 1.0, 1.0, 1.0, budget_s=7.0)
    b = TimeLimits({}, 1.0, 1.0, 1.0, budget_s=11.0)
    assert grading_cap({"public": a, "hidden": b}) == 7.0 + 11.0 + clock.WALL_ALLOWANCE_S


def test_a_submission_that_sleeps_in_every_test_holds_the_grader_for_its_cap(
        problem, cache, monkeypatch):
    run(problem, cache, REFERENCE)  # the reference's runs, cached
    # the cap (about 7 s of budgets + 2 s) ends the first sleep, well before a phase's net
    monkeypatch.setattr(clock, "WALL_ALLOWANCE_S", 2.0)
    t = time.perf_counter()
    _, d = run(problem, cache, SLEEPER)
    held = time.perf_counter() - t
    tests = d["tests"]
    n = len(tests)
    print(f"\n{n} tests that each sleep 12 s held the grader {held:.1f}s "
          f"(without the cap: {n} x 12 s and more, twice over with the rerun)")
    public = [t for t in tests if t["suite"] == "public"]
    assert d["verdict"] == "TLE"
    assert public[0]["verdict"] == "TLE"
    assert "wall-clock time" in public[0]["failure"]["message"]
    assert "not run again" in public[0]["failure"]["message"]
    assert all(t["verdict"] in ("NR", "TLE") for t in public[1:])
    # a failed hidden test shows one word, whatever stopped it (concealed.py)
    assert all((t["verdict"], t["failure"]["kind"]) == ("WA", "failed")
               for t in tests if t["suite"] == "hidden")
    assert held < 45, held  # budgets of a few seconds + 2 s, plus starting the sandboxes
