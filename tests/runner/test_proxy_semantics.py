"""The handbook's one-process semantics carried across the call proxy (issue 27, item 4;
docs/IMPORTED_GRADING.md): what a test can observe of the objects it exchanges with the
submission is what it would observe in one process. Fixture book
tests/fixtures/handbook_semantics/book: problems written for these tests, each failing on the
proxy before its change (measured numbers in the commit messages)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from imported_bank import imported_bank

from judge import grade

BOOK = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_semantics" / "book"
RUNS = 3  # a reference that passes by chance passes some runs only

pytestmark = pytest.mark.usefixtures("run_cache")


@pytest.fixture(scope="module")
def bank(tmp_path_factory) -> dict:
    return imported_bank(tmp_path_factory, BOOK, "semantics", runtime=BOOK.parent / "runtime")


def source(slug: str, file: str = "solution.py") -> str:
    return (BOOK / slug / file).read_text(encoding="utf-8")


def verdicts(r) -> dict:
    return {t.name.split("::")[1]: str(t.verdict) for t in r.tests}


def failures(r) -> list:
    return [(t.name, str(t.verdict), t.failure) for t in r.tests if str(t.verdict) != "AC"]


def accepted_every_time(problem, src: str, runs: int = RUNS) -> None:
    for i in range(runs):
        r = grade(problem, src)
        assert str(r.verdict) == "AC", (i, failures(r))


# ---- identity: what crosses and comes back is the caller's own object ----------------------

def test_an_array_stored_from_a_dict_comes_back_as_the_callers_own(bank):
    accepted_every_time(bank["load-weights"], source("load-weights"))


def test_a_copying_load_is_rejected(bank):
    copying = source("load-weights").replace('state["weight"]', 'state["weight"].copy()')
    r = grade(bank["load-weights"], copying)
    assert verdicts(r)["test_load_keeps_the_callers_arrays"] == "WA", failures(r)


def test_linked_list_nodes_keep_their_ids_while_they_live(bank):
    accepted_every_time(bank["reverse-nodes"], source("reverse-nodes"))


def test_a_reverse_that_makes_new_nodes_is_rejected(bank):
    fresh = source("reverse-nodes").replace(
        "    prev = None\n    while head is not None:\n"
        "        head.next, prev, head = prev, head, head.next\n    return prev\n",
        "    prev = None\n    while head is not None:\n"
        "        prev, head = ListNode(head.val, prev), head.next\n    return prev\n")
    r = grade(bank["reverse-nodes"], fresh)
    assert str(r.verdict) == "WA", failures(r)
    assert verdicts(r)["test_reverse_relinks_the_same_nodes"] == "WA"


_HOLDER = '''
class Holder:
    def keep(self, x):
        self.x = x

    def scale_(self, k):
        self.x *= k

    def same(self, y):
        return y is self.x
'''


def test_each_side_keeps_what_the_other_did_not_change(served_endpoint):
    ep = served_endpoint(_HOLDER)
    np = pytest.importorskip("numpy")
    h = ep.request("import", None, "Holder")()
    a = np.ones(3)
    h.keep(a)
    assert h.same(a) is True  # sent again: the copy made the first time
    a[0] = 5.0                # the test's write after handing it over...
    assert h.x is a and a[0] == 5.0  # ...stands when the unchanged copy comes back
    h.scale_(2.0)             # (reading h.x lent it: the 5 reached the copy, borrowed.py)
    assert h.x is a and a.tolist() == [10.0, 2.0, 2.0]


def test_an_array_number_never_given_is_refused():
    from judge.runner.proxy.identity import Identities
    from judge.runner.proxy.wire import WireError
    pairs = Identities()
    for forged in ({"o": 99}, {"o": 0}, {"i": "1"}, {"o": 1, "i": 1}):
        with pytest.raises(WireError):  # an `o` names only what this side numbered and sent
            pairs.incoming({"A": {}, **forged}, {}, None)


# ---- the tests' own classes keep their identity for the student's code -----------------------

def test_the_tests_dataclasses_are_their_classes_over_there(bank):
    accepted_every_time(bank["tag-records"], source("tag-records"))


def test_a_serde_that_drops_a_field_is_rejected(bank):
    wrong = source("tag-records").replace("for f in dataclasses.fields(obj)}",
                                          "for f in dataclasses.fields(obj)[:1]}")
    r = grade(bank["tag-records"], wrong)
    assert str(r.verdict) == "WA", failures(r)
    assert verdicts(r)["test_encode_tags_by_class_name"] == "WA"
    assert verdicts(r)["test_isinstance_against_the_class_passed"] == "AC"


_TAGGER = '''
import dataclasses


def info(obj):
    t = type(obj)
    return [t.__name__, t.__qualname__, t.__module__, [f.name for f in dataclasses.fields(obj)],
            dataclasses.asdict(obj), dataclasses.is_dataclass(obj)]


def inst(objs, cls):
    return [isinstance(o, cls) for o in objs]


def rep(obj, **kw):
    return dataclasses.replace(obj, **kw)


def match(o, P):
    match o:
        case P(0, y):
            return y
    return None


def sub(c):
    class S(c):
        pass
'''


@dataclass
class P:  # a class of this file: the tests' own for served_submission's guard
    x: int
    y: int = 3


class Q:
    pass


def test_a_tests_dataclass_is_its_class_over_there(served_endpoint):
    ep = served_endpoint(_TAGGER)

    def f(name):
        return ep.request("import", None, name)
    assert f("info")(P(1, 2)) == ["P", "P", __name__, ["x", "y"], {"x": 1, "y": 2}, True]
    assert f("inst")([P(1), Q(), P(2)], P) == [True, False, True]
    r = f("rep")(P(1, 2), y=5)  # replace() calls obj.__class__: the test's P, made here
    assert type(r) is P and r == P(1, 5)
    assert f("match")(P(0, 9), P) == 9  # __match_args__
    with pytest.raises(TypeError, match="subclassed"):
        f("sub")(P)


# ---- the tests' warning filters apply in the submission's process -----------------------------

def test_the_tests_warning_filters_and_records_reach_the_students_code(bank):
    accepted_every_time(bank["stable-gate"], source("stable-gate"))


def test_an_overflow_the_test_makes_an_error_is_its_exception(bank):
    unstable = source("stable-gate").replace(
        "    e = np.exp(-np.abs(a))\n    sig = np.where(a >= 0, 1.0 / (1.0 + e), e / (1.0 + e))\n",
        "    sig = 1.0 / (1.0 + np.exp(-a))\n")
    r = grade(bank["stable-gate"], unstable)
    v = verdicts(r)
    assert v["test_large_inputs_do_not_overflow"] == "WA", failures(r)
    assert v["test_example"] == "AC" and v["test_the_old_name_warns"] == "AC"


_WARNER = '''
import warnings

import numpy as np


def unstable(a):
    return 1.0 / (1.0 + np.exp(-a))


def old():
    warnings.warn("old is deprecated", DeprecationWarning)
    return 1


def catches(a):
    try:
        np.exp(a)
        return "no"
    except RuntimeWarning as e:
        return str(e)
'''


def test_warning_filters_apply_over_there_and_warnings_come_back(served_endpoint):
    import warnings
    np = pytest.importorskip("numpy")
    ep = served_endpoint(_WARNER)

    def f(name):
        return ep.request("import", None, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning, match="overflow"):
            f("unstable")(np.array([-1000.0]))
        assert "overflow" in f("catches")(np.array([1000.0]))  # the student's own except
    assert f("catches")(np.array([1000.0])) == "no"  # the filters the test put back
    with pytest.warns(DeprecationWarning, match="deprecated"):
        assert f("old")() == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore")
        f("old")()
    assert caught == []


def test_warning_keys_come_from_their_own_side_only():
    from judge.runner.proxy.protocol import check_message
    from judge.runner.proxy.wire import WireError
    with pytest.raises(WireError, match="undeclared key"):  # filters sent by the submission
        check_message({"t": "res", "id": 1, "ok": 1, "wf": []}, "trusted")
    with pytest.raises(WireError, match="undeclared key"):  # warnings "shown" by the tests
        check_message({"t": "req", "id": 1, "op": "call", "self": 1, "args": [], "w": []},
                      "submission")


# ---- a simulator's accounting is not the student's CPU ------------------------------------------

def test_the_vector_kernel_is_accepted(bank):
    accepted_every_time(bank["row-sums"], source("row-sums"))


def test_a_kernel_of_scalar_loads_is_wrong_not_slow(bank):
    # 16 times the reference's accesses, each served by the simulator in the tests' process:
    # TLE while that serving counted as the submission's CPU (measured at 38bebed), WA now
    r = grade(bank["row-sums"], source("row-sums", "starter.py"))
    assert str(r.verdict) == "WA", failures(r)
    assert verdicts(r) == {"test_example": "AC", "test_vector_loads_only": "WA"}


_CALLER = '''
def call_back(f, n):
    for i in range(n):
        f(i)
'''


def test_serving_cpu_is_the_trusted_sides_answering_time_only(served_endpoint):
    import time
    ep = served_endpoint(_CALLER)
    call_back = ep.request("import", None, "call_back")

    def burn(i):  # the test's callback, run while serving the submission's request
        t = time.thread_time()
        while time.thread_time() - t < 0.002:
            pass
    before = ep.serving_cpu.total
    t = time.thread_time()
    while time.thread_time() - t < 0.05:  # the test's own work: not serving
        pass
    assert ep.serving_cpu.total == before
    call_back(burn, 50)
    served = ep.serving_cpu.total - before
    assert 0.1 <= served < 0.1 + 0.05, served  # the callbacks, counted once each


def test_the_graders_reading_of_the_served_cpu_is_bounded():
    from judge.grading.proxied import _Meter, _served, served_cpu
    assert _served(b"served 1.5", 1.0) == 1.5
    assert _served(b"served 0.5", 1.0) == 1.0  # it only grows
    assert _served(b"served nan", 1.0) == 1.0 and _served(b"served x", 1.0) == 1.0
    meter = _Meter()
    meter.served = 5.0
    assert served_cpu(2.0, meter) == 2.0  # never more than the trusted sandbox's CPU
    assert served_cpu(None, meter) == 0.0
