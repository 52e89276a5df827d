"""A test that sets its own function on a student's class across the proxy (judge/runner/proxy/
classes.py, docs/IMPORTED_GRADING.md), as the handbook's sv-scheduler does with
`Scheduler.schedule = ref_schedule`: it binds as a method, a staticmethod or classmethod stays
one, an instance attribute stays unbound, and putting the original back (by hand or by
monkeypatch's undo) restores what the class held. Fixture tests/fixtures/handbook_graded/book/
pick-queue is a problem written for these tests in the handbook's format."""

from __future__ import annotations

from pathlib import Path

import pytest
from imported_bank import imported_bank
from served_submission import start_served

from judge import check_problem, grade
from judge.runner.proxy import Remote

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_graded" / "book"


SUBMISSION = '''
class Q:
    LIMIT = 2

    def __init__(self, items):
        self.items = list(items)

    def pick(self):
        return self.items[0]

    def twice(self):
        return [self.pick(), self.pick()]

    @staticmethod
    def weight(x):
        return x

    @classmethod
    def make(cls, *items):
        return cls(items)

    def heavier(self):
        return max(self.items, key=self.weight)

    def over(self):
        return [x for x in self.items if x > self.LIMIT]

    def hook_result(self):
        return self.hook()

    def names(self):
        return [type(self).pick.__name__, type(self).pick is type(self).pick]

    def reach(self):
        """What the student's code can do with the test's function it now holds."""
        fn = type(self).__dict__["pick"].__closure__[0].cell_contents
        out = []
        for attempt in (lambda: fn._secret, lambda: fn.__globals__, lambda: fn(self)):
            try:
                out.append(repr(attempt()))
            except BaseException as e:
                out.append(type(e).__name__)
        return out

    def tamper(self):
        out = []
        static = type(self).__dict__["weight"].__func__  # the test's function
        for attempt in (lambda: setattr(self.other, "x", 1), lambda: setattr(static, "y", 1),
                        lambda: setattr(self.other, "_z", 1)):
            try:
                attempt()
                out.append("set")
            except BaseException as e:
                out.append(type(e).__name__)
        return out


def helper(x):
    return x + 1


def use(x):
    return helper(x) * 10


class Sub(Q):
    pass
'''

pytestmark = pytest.mark.usefixtures("run_cache")


@pytest.fixture
def sub(tmp_path):
    """The submission side (judge_runner.proxy.serve) in a plain subprocess; its module's names."""
    procs: list = []
    ep = start_served(tmp_path, SUBMISSION, procs)
    proc = procs[0]
    def get(name):
        return ep.request("import", None, name)

    get.ep = ep  # type: ignore[attr-defined]
    yield get
    proc.kill()
    proc.wait()


def ref_pick(q):
    return q.items[-1]


def test_a_function_set_on_the_class_binds_and_is_the_tests_own(sub):
    Q, Sub = sub("Q"), sub("Sub")
    q = Q([1, 2, 3])
    orig = Q.pick
    assert q.pick() == 1
    Q.pick = ref_pick
    assert q.pick() == 3                      # called by the test: ref_pick(q)
    assert q.twice() == [3, 3]                # called by the student's own method
    assert Sub([4, 5]).pick() == 5            # inherited, as a method is
    assert Q.pick is ref_pick                 # read back, the test's function itself
    assert q.names() == ["ref_pick", True]
    Q.pick = orig
    assert q.twice() == [1, 1] and Q.pick is orig


def test_an_instance_attribute_set_to_a_function_stays_unbound(sub):
    q = sub("Q")([1, 2])
    q.hook = lambda: "plain"
    assert q.hook_result() == "plain"
    q.pick = ref_pick                         # no self: called with none, as in Python
    with pytest.raises(TypeError):
        q.twice()


def test_staticmethod_classmethod_and_values_set_and_restored(sub):
    Q = sub("Q")
    q = Q([1, 5, 3])
    orig_weight, orig_make = Q.weight, Q.make
    Q.weight = staticmethod(lambda x: -x)
    assert q.heavier() == 1 and Q.weight(2) == -2
    Q.make = classmethod(lambda cls, *items: cls(items[::-1]))
    assert Q.make(1, 2).pick() == 2
    Q.LIMIT = 4
    assert q.over() == [5]
    Q.weight, Q.make, Q.LIMIT = orig_weight, orig_make, 2
    assert q.heavier() == 5 and Q.weight(2) == 2  # a staticmethod again, not a method
    assert Q.make(1, 2).pick() == 1 and q.over() == [5, 3]


def test_monkeypatch_undo_restores_the_class(sub):
    Q = sub("Q")
    q = Q([1, 5, 3])
    mp = pytest.MonkeyPatch()
    mp.setattr(Q, "pick", ref_pick)
    mp.setattr(Q, "weight", staticmethod(lambda x: -x))
    mp.setattr(Q, "extra", lambda self: len(self.items), raising=False)
    assert q.twice() == [3, 3] and q.heavier() == 1 and q.extra() == 3
    mp.undo()
    assert q.twice() == [1, 1] and q.heavier() == 5
    with pytest.raises(AttributeError):
        q.extra()


def test_the_installed_function_reaches_nothing_new(sub):
    Q = sub("Q")
    Q.pick = ref_pick
    q = Q([7, 8])
    # the test's function, dug out of the class by the student's code: its `_` names and
    # dunders are refused as for any handle, and calling it is what the test handed over
    assert q.reach() == ["ProxyRefused", "AttributeError", "8"]
    f = sub("Q").pick
    assert f is ref_pick and not isinstance(f, Remote)


def test_the_tests_functions_and_classes_still_cannot_be_changed_from_there(sub):
    class Mine:
        pass

    Q = sub("Q")
    Q.weight = staticmethod(lambda x: x)
    q = Q([1])
    q.other = Mine
    assert q.tamper() == ["ProxyRefused", "ProxyRefused", "ProxyRefused"]
    assert not hasattr(Mine, "x") and not hasattr(Mine, "_z")


def test_a_name_set_on_the_students_module_is_set_there_and_put_back(sub, monkeypatch):
    from judge.runner.proxy import trusted
    monkeypatch.setattr(trusted.L, "ep", sub.ep)
    solution = trusted.SolutionModule("solution")
    use, orig = solution.use, solution.helper
    calls = []

    def watched(x):
        calls.append(x)
        return orig(x)

    solution.helper = watched                   # by hand, as llm-int4-quant's test does
    assert use(4) == 50 and calls == [4] and solution.helper is watched
    solution.helper = orig
    assert use(4) == 50 and calls == [4]
    mp = pytest.MonkeyPatch()
    mp.setattr(solution, "helper", lambda x: -x)
    mp.setattr(solution, "added", 3, raising=False)
    assert use(4) == -40 and solution.added == 3
    mp.undo()                                   # deletes both: the student's own comes back
    assert use(4) == 50 and solution.helper is orig
    with pytest.raises(AttributeError):
        solution.added  # noqa: B018


# ---- graded: the sandboxes ------------------------------------------------------------------

@pytest.fixture(scope="module")
def pick_queue(tmp_path_factory):
    return imported_bank(tmp_path_factory, FIXTURES, "patching")["pick-queue"]


def test_pick_queue_graded(pick_queue):
    src = (FIXTURES / "pick-queue" / "solution.py").read_text(encoding="utf-8")
    assert check_problem(pick_queue).errors == []
    r = grade(pick_queue, src)
    assert str(r.verdict) == "AC", [(t.name, str(t.verdict), t.failure) for t in r.tests]
    # a pick that ignores self.weight: the reference run (the test's pick) still matches the
    # student's queue, but the monkeypatched weight shows it
    no_weight = src.replace("self.weight(size) < self.weight(self._items[best][1])",
                            "size < self._items[best][1]")
    v = {t.name.split("::")[1]: str(t.verdict) for t in grade(pick_queue, no_weight).tests}
    assert v["test_matches_the_reference"] == "AC" and v["test_another_weight"] == "WA"
    # the last fitting task instead of the lightest: the reference trace differs
    wrong = src.replace("< self.weight(self._items[best][1])", "<= 10 ** 9")
    v = {t.name.split("::")[1]: str(t.verdict) for t in grade(pick_queue, wrong).tests}
    assert v["test_matches_the_reference"] == "WA"
