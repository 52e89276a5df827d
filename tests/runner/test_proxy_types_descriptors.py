"""The student's descriptor classes in a test's class body (judge/runner/proxy/peertypes.py,
docs/IMPORTED_GRADING.md), and what the submission cannot reach through them or ask for directly:
the tests' objects' `_` attributes through `__dict__`, a subclass of the tests' classes, a copy of
their objects. The submission side is `judge_runner.proxy.serve` in a plain subprocess; the tests hold a
guarded endpoint, as graded."""

from __future__ import annotations

import os

import pytest

from judge.runner.proxy import Endpoint, ProxyRefused
from judge.runner.proxy.wire import Channel

DESCRIPTORS = """
class Field:
    def __set_name__(self, owner, name):
        self.name = name
    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        try:
            return instance.__dict__[self.name]
        except KeyError:
            raise AttributeError(self.name) from None
    def __set__(self, instance, value):
        instance.__dict__[self.name] = self.validate(value)
    def validate(self, value):
        return value

class Positive(Field):
    def validate(self, value):
        if value <= 0:
            raise ValueError(f"{self.name} must be positive")
        return value

class Snoop(Field):
    def __set__(self, instance, value):
        instance.__dict__["_secret"] = value

def keys(obj):
    return sorted(obj.__dict__)

def peek(obj):
    return obj.__dict__["_hidden"]

def peek_function(f):
    return f.__dict__["x"]
"""


def test_the_students_descriptors_in_a_tests_class_body(served):
    imp = served(DESCRIPTORS)
    Field, Positive = imp("Field"), imp("Positive")

    class Box:
        size = Positive()
        label = Field()

        def __init__(self, size):
            self.size = size

    b = Box(3)
    assert b.size == 3 and b.__dict__["size"] == 3
    with pytest.raises(ValueError, match="size must be positive"):
        b.size = -1
    with pytest.raises(ValueError):
        Box(0)
    with pytest.raises(AttributeError):
        b.label
    b.label = "x"
    assert b.label == "x" and Box(5).size == 5 and b.size == 3
    assert isinstance(Box.size, Positive) and isinstance(Box.size, Field)


def test_the_tests_objects_underscore_attributes_stay_out_of_reach(served):
    imp = served(DESCRIPTORS)

    class Box:
        spy = imp("Snoop")()

    b = Box()
    with pytest.raises(ProxyRefused):
        b.spy = 1
    b._hidden, b.shown = "key", 1
    assert imp("keys")(b) == ["shown"]
    with pytest.raises(ProxyRefused):
        imp("peek")(b)

    def f():
        pass

    f.x = 1
    with pytest.raises((ProxyRefused, AttributeError)):  # a function's attributes: none there
        imp("peek_function")(f)


def test_the_trusted_side_refuses_the_new_requests_from_the_submission():
    """What the submission could ask of the trusted side directly (its own process holds the
    endpoint): no subclass of the tests' classes, no copy of their objects, no `_` key or
    function or class through `__dict__`."""
    from types import SimpleNamespace

    from judge.runner.proxy.operations import perform
    r, w = os.pipe()
    ep = Endpoint(Channel(r, w), guarded=True)

    class Mine:
        pass

    obj = SimpleNamespace(shown=1, _hidden=2)
    refused = [("subclass", None, ["X", [Mine], {}, {}, {}, {}]), ("copy", obj, []),
               ("deepcopy", obj, []), ("pickled", obj, []), ("vget", obj, ["_hidden"]),
               ("vset", obj, ["_hidden", 3]), ("vdel", obj, ["_hidden"]),
               ("vget", Mine, ["__module__"]), ("vset", Mine, ["x", 1]),
               ("vkeys", perform, [])]
    for op, target, args in refused:
        with pytest.raises(ProxyRefused):
            perform(ep, op, target, args, {})
    assert perform(ep, "vkeys", obj, [], {}) == ["shown"]
    assert perform(ep, "vget", obj, ["shown"], {}) == 1 and obj._hidden == 2
    os.close(r)
    os.close(w)
