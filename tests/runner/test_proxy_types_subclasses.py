"""A test's subclass of a student's class (judge/runner/proxy/peertypes.py, docs/IMPORTED_GRADING.md):
the student's `__init_subclass__` registering the test's classes, `super()` reaching the student's
methods, copies and pickles of a subclass whose base's `__getattr__` forwards. The submission side
is `judge_runner.proxy.serve` in a plain subprocess; the tests hold a guarded endpoint, as graded."""

from __future__ import annotations

import pytest

from judge.runner.proxy import ProxyRefused

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
