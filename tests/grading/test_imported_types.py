"""The submission's classes as real types on the trusted side (judge/runner/rpc/peertypes.py,
docs/IMPORTED_GRADING.md), on shapes the handbook's tests use: `isinstance(v + w, Vector)`,
a class of the student's that subclasses collections.abc.Sequence, the student's descriptor
classes in a test's class body. And what the submission cannot do with it: make `isinstance`
answer by its own metaclass, make one of the tests' classes a base of its own, or read the
tests' objects' `_` attributes through `__dict__`. The submission side is `judge_runner.serve`
in a plain subprocess; the tests hold a guarded endpoint, as graded."""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Sequence, Sized
from numbers import Real
from pathlib import Path

import pytest
from served_submission import served_endpoint  # noqa: F401  (a fixture)

from judge.runner.rpc import Endpoint, ProxyRefused
from judge.runner.rpc.peertypes import RemoteClass
from judge.runner.wire import Channel

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(served_endpoint):
    """start(module_source) -> a function importing a name from the served module."""
    def start(module_source: str):
        ep = served_endpoint(module_source)
        return lambda name: ep.request("import", None, name)
    return start


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
    ep = Endpoint(Channel(r, w), guarded=True)

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


REGISTRY = """
class Plugin:
    _registry = {}

    def __init_subclass__(cls, name=None, rank=0, **kwargs):
        super().__init_subclass__(**kwargs)
        if name is None:
            return
        if name in Plugin._registry:
            raise ValueError(f"{name} twice")
        cls.name, cls.rank = name, rank
        Plugin._registry[name] = cls

    def run(self, x):
        raise NotImplementedError

    def twice(self, x):
        return [self.run(x), self.run(x)]

    @classmethod
    def make(cls, name, *args, **kwargs):
        return Plugin._registry[name](*args, **kwargs)

    @staticmethod
    def names():
        return sorted(Plugin._registry, key=lambda n: (-Plugin._registry[n].rank, n))

    @staticmethod
    def clear():
        Plugin._registry.clear()
"""


def test_a_tests_class_subclassing_the_students_registers_there(served):
    """The shape of py-plugin-registry: the student's base registers subclasses in its
    `__init_subclass__`; the test's subclasses' methods, `__init__` and properties are the
    test's code, called from the student's."""
    imp = served(REGISTRY)
    Plugin = imp("Plugin")
    Plugin.clear()

    class Inc(Plugin, name="inc"):
        def run(self, x):
            return x + 1

    class Scaled(Plugin, name="scaled", rank=5):
        def __init__(self, k, bias=0):
            self.k, self.bias = k, bias

        def run(self, x):
            return self.k * x + self.bias

        @property
        def k2(self):
            return self.k * 2

    class Middle(Plugin):  # no name: not registered; its subclass is
        def run(self, x):
            return -x

    class Leaf(Middle, name="leaf"):
        pass

    assert Plugin.names() == ["scaled", "inc", "leaf"] and Inc.name == "inc"
    assert Plugin.make("inc").twice(3) == [4, 4]
    s = Plugin.make("scaled", 3, bias=1)
    assert s.run(2) == 7 and s.k2 == 6 and s.twice(1) == [4, 4]
    assert isinstance(s, Scaled) and isinstance(s, Plugin) and not isinstance(s, Inc)
    assert type(Scaled(1)) is Scaled and issubclass(Leaf, Middle) and Leaf().run(4) == -4
    with pytest.raises(ValueError, match="inc twice"):
        class Again(Plugin, name="inc"):
            pass

    class Mine:
        pass

    with pytest.raises(TypeError):
        class Mixed(Mine, Plugin):
            pass


FORWARDING = """
MODULES = {}

class Platform:
    kind = "cpu"

    def __getattr__(self, key):
        if key.startswith("__") and key.endswith("__"):
            raise AttributeError(key)
        m = MODULES.get(self.kind)
        return getattr(m, key, None) if m is not None else None

def copies(obj):
    import copy
    return copy.copy(obj)
"""


def test_copies_and_pickles_of_the_students_objects_are_made_there(served):
    """The shape of sv-platform-resolve: a test's subclass of a class whose `__getattr__`
    forwards, copied and pickled by the test."""
    import copy
    import pickle
    from types import SimpleNamespace

    imp = served(FORWARDING)
    Platform = imp("Platform")
    imp("MODULES")["npu"] = SimpleNamespace(sync=lambda: "npu-sync")

    class NPU(Platform):
        kind = "npu"

        def count(self):
            return 16

    p = NPU()
    assert p.sync() == "npu-sync" and p.count() == 16 and p.missing is None
    with pytest.raises(AttributeError):
        getattr(p, "__not_a_dunder__")
    c = copy.copy(p)
    assert isinstance(c, NPU) and c is not p and c.count() == 16
    assert isinstance(copy.deepcopy(p), NPU)
    again = pickle.loads(pickle.dumps(Platform()))
    assert type(again).__name__ == "Platform" and type(again) is Platform
    # the tests' own objects are not copied on the submission's request
    with pytest.raises(ProxyRefused):
        imp("copies")(SimpleNamespace(a=1))


INSPECTS = """
import typing

def describe(tp):
    if typing.is_typeddict(tp):
        hints = typing.get_type_hints(tp)
        return ["typeddict", tp.__name__, sorted(tp.__required_keys__),
                {k: describe(v) for k, v in hints.items()}]
    origin = typing.get_origin(tp)
    if origin is not None:
        return [repr(origin), [describe(a) for a in typing.get_args(tp)]]
    if isinstance(tp, type):
        return tp.__name__
    return repr(tp)

def same(tp):
    return tp
"""


def test_annotations_and_the_tests_typeddicts_cross_by_value(served):
    """The shape of py-validate-typed: the student's code inspects the annotations the test
    hands it (a TypedDict of the test's, nested in a list, Optional, Literal)."""
    from typing import Any, Dict, List, Literal, NotRequired, Optional, TypedDict, Union

    # (the functional form: this file's annotations are strings, `from __future__`)
    Msg = TypedDict("Msg", {"role": Literal["user", "bot"], "text": str})
    Chat = TypedDict("Chat", {"model": str, "messages": list[Msg],  # type: ignore[misc]
                              "temperature": Optional[float], "extra": NotRequired[int]})

    imp = served(INSPECTS)
    describe = imp("describe")
    assert describe(list[int]) == ["<class 'list'>", ["int"]]
    assert describe(int | None) == ["<class 'types.UnionType'>", ["int", "NoneType"]]
    assert describe(Union[int, str]) == ["typing.Union", ["int", "str"]]
    assert describe(tuple[int, ...]) == ["<class 'tuple'>", ["int", "Ellipsis"]]
    assert describe(Dict[str, List[float]]) == ["<class 'dict'>", ["str", ["<class 'list'>",
                                                                          ["float"]]]]
    assert describe(Literal["a", 1]) == ["typing.Literal", ["'a'", "1"]]
    assert describe(Any) in ("Any", "typing.Any")
    msg = ["typeddict", "Msg", ["role", "text"],
           {"role": ["typing.Literal", ["'user'", "'bot'"]], "text": "str"}]
    assert describe(Chat) == ["typeddict", "Chat", ["messages", "model", "temperature"],
                              {"model": "str", "messages": ["<class 'list'>", [msg]],
                               "temperature": ["typing.Union", ["float", "NoneType"]],
                               "extra": "int"}]
    # what crosses back is the test's own: the class itself, the annotation equal
    assert imp("same")(Chat) is Chat and imp("same")(list[Msg]) == list[Msg]
    assert imp("same")(Optional[Msg]) == Optional[Msg]


def test_malformed_annotations_are_the_peers_protocol_error():
    from judge.runner.wire import WireError
    r, w = os.pipe()
    ep = Endpoint(Channel(r, w), guarded=True)
    for bad in ({"TF": []}, {"TF": ["GA", {"R": 3, "k": "", "n": "x"}, []]},
                {"TF": ["T", "os", []]}, {"TF": ["TD", "x", "A", [], ""]},
                {"TF": ["TD", 4, "A", [["k", 1, "yes"]], ""]}, {"TF": ["nope"]}):
        with pytest.raises(WireError):
            ep.decode(bad)
    os.close(r)
    os.close(w)


def test_the_trusted_side_refuses_the_new_requests_from_the_submission():
    """What the submission could ask of the trusted side directly (its own process holds the
    endpoint): no subclass of the tests' classes, no copy of their objects, no `_` key or
    function or class through `__dict__`."""
    from types import SimpleNamespace

    from judge.runner.rpc.operations import perform
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


# ---- graded: the sandboxes ------------------------------------------------------------------

FIXTURES = REPO / "tests" / "fixtures" / "handbook_types" / "book"


@pytest.fixture(scope="module")
def shape_kit(tmp_path_factory):
    from judge import load_problem
    from judge.authoring.importer import import_problems
    root = tmp_path_factory.mktemp("types") / "problems"
    res = import_problems([FIXTURES], root)
    assert not res.refused, res.refused
    return {i.key.split("/")[1]: load_problem(str(i.folder)) for i in res.imported}["shape-kit"]


def _verdicts(problem, src: str) -> dict:
    from judge.grading.grader import grade
    r = grade(problem, src)
    return {t.name.split("::")[1]: str(t.verdict) for t in r.tests} | {"": str(r.verdict)}


def test_shape_kit_proves_itself_and_wrong_files_are_not_accepted(shape_kit, monkeypatch,
                                                                  tmp_path):
    from judge.authoring.check import check_problem
    monkeypatch.setenv("KVPRACTICE_CACHE", str(tmp_path / "cache"))
    assert check_problem(shape_kit).errors == []
    src = (FIXTURES / "shape-kit" / "solution.py").read_text(encoding="utf-8")
    assert _verdicts(shape_kit, src)[""] == "AC"
    # a metaclass that says every object is a Rect, and a scaled() of another class: in one
    # process `isinstance(fake, Rect)` holds; here it is the handle's class that decides
    liar = src.replace("class Rect(Shape):", "class Yes(type):\n"
                       "    def __instancecheck__(cls, obj):\n        return True\n\n\n"
                       "class Fake:\n    def area(self):\n        return 24\n\n\n"
                       "class Rect(Shape, metaclass=Yes):").replace(
        "        return Rect(self.w * k, self.h * k)", "        return Fake()")
    assert liar != src
    v = _verdicts(shape_kit, liar)
    assert v["test_example"] == "WA" and v[""] != "AC"
    # a Row that is not a Sequence, and a descriptor that does not validate
    plain_row = src.replace("class Row(Sequence):", "class Row:")
    assert _verdicts(shape_kit, plain_row)["test_rows_are_sequences"] != "AC"
    lax = src.replace("        if value < 0:\n", "        if value < -10 ** 9:\n")
    assert _verdicts(shape_kit, lax)["test_descriptor"] == "WA"


SUPER = """
class Base:
    def __init__(self, size):
        self.size = size
        self.log = []

    def describe(self):
        return f"base {self.size}"

    def grow(self, k):
        self.size += k
        return self.size
"""


def test_super_in_a_tests_subclass_reaches_the_students_methods(served):
    imp = served(SUPER)
    Base = imp("Base")

    class Big(Base):
        def __init__(self, size, extra):
            super().__init__(size * 10)
            self.extra = extra

        def describe(self):
            return "big, " + super().describe()

    b = Big(2, "x")
    assert b.size == 20 and b.extra == "x" and b.log == []
    assert b.describe() == "big, base 20" and b.grow(1) == 21
    assert "describe" in Base.__dict__ and "grow" not in Big.__dict__
    # patched on the class and put back, as monkeypatch does: the student's own again
    mp = pytest.MonkeyPatch()
    mp.setattr(Base, "grow", lambda self, k: -1)
    assert Base(1).grow(5) == -1 and b.grow(1) == -1
    mp.undo()
    assert Base(1).grow(5) == 6 and b.grow(1) == 22
