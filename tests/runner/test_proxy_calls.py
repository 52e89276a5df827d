"""The call proxy of imported problems (docs/IMPORTED_GRADING.md) on what real handbook tests do:
objects keep their identity across (enum members, singletons, an object returned twice), a list
read from an attribute changes in place, a method call is one request, and `time_limit` charges
the submission its own work, not the proxy's. Fixtures tests/fixtures/handbook_graded/book/
job-states and quick-lru are problems written for these tests in the handbook's format."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from imported_bank import imported_bank

import reference  # noqa: F401  (puts `checker` on sys.path, as a test file imports it)
from judge import check_problem, grade
from judge.runner.proxy import Remote
from judge.runner.proxy.wire import WireError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_graded" / "book"

pytestmark = pytest.mark.usefixtures("run_cache")


@pytest.fixture(scope="module")
def bank(tmp_path_factory) -> dict:
    return imported_bank(tmp_path_factory, FIXTURES, "calls")


def source(name: str, file: str = "solution.py") -> str:
    return (FIXTURES / name / file).read_text(encoding="utf-8")


@pytest.fixture
def served(served_endpoint):
    """A submission side (judge_runner.proxy.serve) in a plain subprocess, and a guarded endpoint."""
    return served_endpoint


# ---- the proxy, directly -----------------------------------------------------------------

def test_identity_enum_members_and_attribute_lists(served):
    ep = served(source("job-states"))
    Board, Kind, Status, IDLE = (ep.request("import", None, n)
                                 for n in ("Board", "Kind", "Status", "IDLE"))
    b = Board()
    job = b.add("a", Kind.SLOW)
    assert isinstance(job, Remote) and job.status is Status.WAITING
    assert b.start() is job and b.find("a") is job and job.status is Status.RUNNING
    assert b.start() is IDLE  # a module's singleton, read twice
    assert job.status != Status.DONE and len({Status.RUNNING, job.status}) == 1
    # a str-valued member is a str here (== its value, as there) and the same object each time
    assert job.kind is Kind.SLOW and job.kind == "slow" and isinstance(job.kind, str)
    assert b.slow_running() == ["a"]
    job.kind = Kind.FAST  # crosses back as the member itself: `is` holds on the other side
    assert b.slow_running() == [] and job.kind is Kind.FAST
    job.log.append(1)
    job.log += [2, 3]
    job.log.pop()
    assert b.logged() == 2 and job.log == [1, 2]


def test_a_method_call_is_one_request_and_a_stand_in_lives_as_long_as_its_object(served):
    ep = served("class C:\n    def f(self, x): return x + 1\n    def g(self): return self\n"
                "def make(): return C()\n")
    c = ep.request("import", None, "make")()
    before = ep.calls
    assert [c.f(i) for i in range(10)] == list(range(1, 11))
    assert ep.calls - before == 10  # no attribute read before each call
    assert c.g() is c
    hid, cid = c._hid, id(c)
    del c
    gc.collect()
    # the submission keeps the object while the run lasts (its handle), so its stand-in is
    # kept too: `id()` of what a test reads twice is the same, as in one process
    assert id(ep.remotes[hid]) == cid
    again = ep.request("import", None, "make")()
    assert again.f(1) == 2


def test_hostile_method_and_class_tags_are_refused(served):
    ep = served("x = 1\n")
    for bad in ({"H": 1, "m": "_secret"}, {"R": 5, "k": "", "n": "C", "y": 1, "ym": ["__init__"]},
                {"R": 6, "k": "", "n": "C", "y": 2, "ym": "f"}, {"R": 7, "k": "e", "e": [1]},
                {"L": [1], "r": -3}):
        with pytest.raises(WireError):
            ep.decode(bad)


# ---- graded: the sandboxes, the grader's CPU samples ------------------------------------

def test_job_states_solution_AC_and_wrong_files_not(bank):
    p = bank["job-states"]
    assert check_problem(p).errors == []
    r = grade(p, source("job-states"))
    assert str(r.verdict) == "AC", [(t.name, str(t.verdict), t.failure) for t in r.tests]
    no_log = source("job-states").replace("sum(len(job.log) for job in self.jobs)", "0")
    r = grade(p, no_log)
    v = {t.name.split("::")[1]: str(t.verdict) for t in r.tests}
    assert str(r.verdict) == "WA" and v["test_example"] == "AC"
    stuck = source("job-states").replace("job.status = Status.RUNNING", "pass")
    assert str(grade(p, stuck, suite="public").verdict) == "WA"


def test_many_calls_pass_a_time_limit_a_slow_file_does_not(bank):
    p = bank["quick-lru"]
    r = grade(p, source("quick-lru"))
    assert str(r.verdict) == "AC", [(t.name, str(t.verdict), t.failure) for t in r.tests]
    slow = source("quick-lru").replace(
        "    def get(self, key):\n", "    def get(self, key):\n        sum(range(20_000))\n")
    r = grade(p, slow)
    v = {t.name.split("::")[1]: t for t in r.tests}
    assert str(v["test_many_calls_in_a_time_limit"].verdict) == "WA"
    assert str(v["test_example"].verdict) == "AC"


def test_the_calibration_before_import_stands_and_a_live_recheck_is_bounded_by_it(monkeypatch):
    """A request of the proxy cost 45-100 us on a slow, loaded machine; a calibration capped at
    60 us left quick-lru's own 20,000 calls 0.26-0.62 s over its limit (IE). Measured before the
    student's module is imported it stands; measured while the student's code is live (a
    recheck, or a calibration made late) it is bounded, so a thread that burns CPU just then
    buys little. The measurement itself is stood in for: this is the rule applied to it."""
    from judge.runner.proxy import trusted

    measured = {"s": 90e-6}
    monkeypatch.setattr(trusted, "_ping_round", lambda n: measured["s"])
    monkeypatch.setattr(trusted.L, "per_call", None)
    assert trusted.overhead_per_call(before_import=True) == pytest.approx(90e-6)
    measured["s"] = 500e-6  # a burning thread during the recheck
    assert trusted.overhead_now(20_000) == pytest.approx(1.5 * 90e-6)
    measured["s"] = 100e-6
    assert trusted.overhead_now(20_000) == pytest.approx(100e-6)

    monkeypatch.setattr(trusted.L, "per_call", None)
    measured["s"] = 90e-6  # calibrated late, with the student's code live: capped
    assert trusted.overhead_per_call() == pytest.approx(trusted.MAX_CALL_OVERHEAD_S)
    measured["s"] = 5e-3   # a stalled host before the import: bounded too
    monkeypatch.setattr(trusted.L, "per_call", None)
    assert trusted.overhead_per_call(before_import=True) == pytest.approx(trusted.MAX_CALIBRATED_S)
