"""The submission's classes as real types on the trusted side (judge/runner/proxy/peertypes.py,
docs/IMPORTED_GRADING.md): `isinstance(v + w, Vector)`, a class of the student's that subclasses
collections.abc.Sequence, and what the submission cannot do with it: make `isinstance` answer by
its own metaclass, or make one of the tests' classes a base of its own. The submission side is
`judge_runner.proxy.serve` in a plain subprocess; the tests hold a guarded endpoint, as graded. The other
shapes: test_proxy_types_descriptors.py, _subclasses.py, _annotations.py and, graded,
tests/grading/test_imported_types_graded.py."""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Sequence, Sized
from numbers import Real
from pathlib import Path

import pytest

from judge.runner.proxy import Endpoint
from judge.runner.proxy.capabilities import Guard
from judge.runner.proxy.peertypes import RemoteClass
from judge.runner.proxy.wire import Channel

VECTORS = """
class Shape:
    def area(self):
        return 0

class Vec(Shape):
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __add__(self, o):
        if not isinstance(o, Vec):
            return NotImplemented
        return Vec(self.x + o.x, self.y + o.y)
    def __eq__(self, o):
        return isinstance(o, Vec) and (self.x, self.y) == (o.x, o.y)
    def __hash__(self):
        return hash((self.x, self.y))
    def norm2(self):
        return self.x * self.x + self.y * self.y

class Other:
    pass

def make_other():
    return Other()

def make_vec():
    return Vec(3, 4)
"""


def test_a_class_of_the_submission_is_a_type_and_its_instances_are_instances(served):
    imp = served(VECTORS)
    Vec, Shape, Other = imp("Vec"), imp("Shape"), imp("Other")
    assert isinstance(Vec, type) and type(Vec) is RemoteClass
    v, w = Vec(1, 2), Vec(10, 20)
    s = v + w
    assert isinstance(s, Vec) and type(s) is Vec and isinstance(s, Shape)
    assert issubclass(Vec, Shape) and not issubclass(Shape, Vec)
    assert s == Vec(11, 22) and s.norm2() == 11 * 11 + 22 * 22 and s.area() == 0
    # the class read again, or reached from an instance made elsewhere, is the same type
    assert imp("Vec") is Vec and type(imp("make_vec")()) is Vec
    assert not isinstance(imp("make_other")(), Vec) and isinstance(Other(), Other)
    assert not isinstance((1, 2), Vec) and not isinstance(Vec, Vec)
    assert {Vec(1, 2), Vec(1, 2)} == {Vec(1, 2)}
    assert repr(Vec) == "<class 'solution.Vec'>" and Vec.__name__ == "Vec"
    with pytest.raises(TypeError):
        v + 1  # NotImplemented there is NotImplemented here


SEQUENCES = """
from collections.abc import Sequence
import numbers

class Seq(Sequence):
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * 10
    __hash__ = None

class Own(Seq):
    def __contains__(self, x):
        return True

class Meters(numbers.Real):
    pass

del Meters.__abstractmethods__
"""


def test_abcs_the_remote_class_is_a_subclass_of_hold_here(served):
    imp = served(SEQUENCES)
    Seq, Own = imp("Seq"), imp("Own")
    s = Seq(3)
    assert isinstance(s, Sequence) and isinstance(s, Sized) and isinstance(s, Iterable)
    assert issubclass(Own, Sequence) and issubclass(Own, Seq)
    assert list(s) == [0, 10, 20] and 10 in s and s.index(20) == 2 and s.count(0) == 1
    assert list(reversed(s)) == [20, 10, 0]
    # the class's own body reads as it is: inherited mixins are not its own
    assert "__contains__" not in Seq.__dict__ and "__iter__" not in Seq.__dict__
    assert "__getitem__" in Seq.__dict__ and "__contains__" in Own.__dict__
    assert not isinstance(s, Hashable)
    with pytest.raises(TypeError):
        hash(s)
    assert issubclass(imp("Meters"), Real)


LIAR = """
class Yes(type):
    def __instancecheck__(cls, obj):
        return True
    def __subclasscheck__(cls, sub):
        return True

class Vec(metaclass=Yes):
    pass

class Fake:
    pass

def fake():
    return Fake()
"""


def test_isinstance_is_never_asked_of_the_submission(served):
    """A wrong file whose class says "everything is an instance of me" in its own process
    makes nothing an instance of it here: the check is the handle's class identity."""
    imp = served(LIAR)
    Vec, Fake = imp("Vec"), imp("Fake")
    assert not isinstance(imp("fake")(), Vec) and not isinstance(5, Vec)
    assert not isinstance((1, 2), Vec) and not issubclass(Fake, Vec)
    assert isinstance(Vec(), Vec)


def test_a_class_of_the_tests_cannot_be_made_a_base_of_a_stand_in_type():
    """A forged account of a class naming one of the trusted side's own classes as its base
    (by the handle the tests gave) gets a stand-in without it: a test's class is never a
    base of the submission's."""
    r, w = os.pipe()
    ep = Endpoint(Channel(r, w), guarded=True, guard=Guard(roots=(str(Path(__file__).parent),)))

    class Trusted:
        pass

    mine = ep.encode(Trusted)  # handed to the submission once
    forged = {"R": 7, "k": "c", "n": "Vec",
              "t": {"b": [{"H": mine["R"]}], "a": ["collections.abc.Sequence", "os.system"],
                    "o": ["__iter__", "__init__"], "p": [], "h": True, "c": False, "m": "x"}}
    cls = ep.decode(forged)
    assert type(cls) is RemoteClass and not issubclass(cls, Trusted)
    assert issubclass(cls, Sequence) and "__init__" not in cls.__dict__
    assert ep.decode({"R": 7, "k": "c", "n": "Vec"}) is cls
    os.close(r)
    os.close(w)
