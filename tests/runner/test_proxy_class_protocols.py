"""`iter`, `len`, `[]` and `in` of the submission's classes and objects on the trusted side
(judge/runner/proxy/remote.py, peertypes.RemoteClass): a class with a metaclass of the student's
(a registry class, `Cls[int]`) answers them as in one process, and what the submission answers
is held to what Python's own `len` and `in` give, for a class as for an object, whatever its
serving side was made to send. The submission side is `judge_runner.proxy.serve` in a plain
subprocess; the tests hold a guarded endpoint, as graded."""

from __future__ import annotations

import pytest

REGISTRY = """
class Registry(type):
    def __iter__(cls):
        return iter(cls._items)
    def __len__(cls):
        return len(cls._items)
    def __getitem__(cls, k):
        return f"{cls.__name__}[{k}]"
    def __contains__(cls, x):
        return x in cls._items

class Plugins(metaclass=Registry):
    _items = ["a", "b", "c"]

class Box:
    def __init__(self, items):
        self.items = list(items)
    def __iter__(self):
        return iter(self.items)
    def __len__(self):
        return len(self.items)
    def __getitem__(self, k):
        return self.items[k]
    def __contains__(self, x):
        return x in self.items
"""

# a submission that rewrites its own serving side's answers: `len` says -1 and `in` says a
# truthy string, for every class and object asked
FORGED = REGISTRY + """
import sys
_ep = sys.modules["runner.proxy.endpoint"]
_perform = _ep.perform

def _forged(ep, op, target, args, kwargs):
    if op == "len":
        return -1
    if op == "contains":
        return "yes"
    return _perform(ep, op, target, args, kwargs)

_ep.perform = _forged
"""


def test_a_classs_own_protocols_are_its_metaclasss_there(served):
    imp = served(REGISTRY)
    Plugins = imp("Plugins")
    assert list(Plugins) == ["a", "b", "c"] and len(Plugins) == 3
    assert "b" in Plugins and "z" not in Plugins
    assert Plugins[int] == "Plugins[<class 'int'>]" and Plugins[2] == "Plugins[2]"
    assert bool(Plugins) is True


def test_an_objects_protocols_are_its_classs_there(served):
    imp = served(REGISTRY)
    box = imp("Box")([4, 5])
    assert list(box) == [4, 5] and len(box) == 2 and box[1] == 5
    assert 4 in box and 6 not in box


def test_forged_len_and_in_answers_are_not_taken(served):
    imp = served(FORGED)
    Plugins, box = imp("Plugins"), imp("Box")([1])
    with pytest.raises(TypeError, match="len\\(\\) of the submission's class is not a "
                                        "non-negative int"):
        len(Plugins)
    with pytest.raises(TypeError, match="len\\(\\) of the submission's object is not a "
                                        "non-negative int"):
        len(box)
    # only True is True: a truthy answer of another type is not membership
    assert "a" not in Plugins and 1 not in box
    assert list(Plugins) == ["a", "b", "c"] and list(box) == [1]
