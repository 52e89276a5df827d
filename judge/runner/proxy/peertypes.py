"""The submission's classes as real types on the trusted side (docs/IMPORTED_GRADING.md).

A class of the submission crosses as a stand-in TYPE made here, one per remote class and
connection, and the stand-ins of its instances are instances of it: `isinstance(v, Vector)`,
`type(v) is Vector` and `issubclass(Sub, Base)` are Python's own answers about local types,
decided from which class the submission said each handle is of. Nothing about them is asked of
the submission: a metaclass or `__instancecheck__` of its own is never consulted here, so an
object can be an instance of its class only, and of the stand-ins of that class's bases.

What the submission tells with the first handle of a class (`class_info`): its bases (those of
them that are themselves such classes), the standard ABCs (collections.abc, numbers) it is a
subclass of, which of the dunders a stand-in forwards it defines in its own body (so
`"__iter__" in Cls.__dict__` reads as it would), whether instances are hashable and callable,
and which descriptor methods it has (`__get__`, `__set__`, `__delete__`, `__set_name__`): a
stand-in type has exactly those, forwarded, so an instance of the student's descriptor class
placed in a test's class body is a descriptor there. All of it the submission could make true
in one process (`Sequence.register(C)`), and none of it reaches a verdict by itself.

On the submission's side a test's object lent to a call has a `__dict__` (`AttributeDict`):
the public keys of the object's own attributes, read and written by request, as a descriptor's
`instance.__dict__[self.name] = value` does. The trusted side answers it for plain objects
only (not functions, classes or modules) and never for a `_` key.
"""

from __future__ import annotations

import abc
import collections.abc
import functools
import numbers
import types
from collections.abc import MutableMapping
from operator import attrgetter

from .remote import OPS, Method, Remote, _Callable, container_protocol
from .wire import WireError

MAX_BASES = 16
MAX_OWN = 200
DESCRIPTOR = ("__get__", "__set__", "__delete__", "__set_name__")
# the dunders Remote forwards: a stand-in type lists in its own body those the class has in its
FORWARDED = frozenset(OPS | {"__iter__", "__next__", "__len__", "__contains__", "__getitem__",
                             "__setitem__", "__delitem__", "__bool__", "__hash__", "__repr__",
                             "__str__", "__await__", "__call__"})
# modules whose classes cross otherwise: by name (stdvalues), as mirrors (exceptions), or not
# as types at all
_NOT_TYPED_MODULES = frozenset({"builtins", "fractions", "decimal", "datetime", "collections",
                                "dataclasses", "numbers", "enum", "abc", "typing", "types"})


def _abcs() -> dict[str, type]:
    out: dict[str, type] = {}
    for mod, names in ((collections.abc, collections.abc.__all__),
                       (numbers, ("Number", "Complex", "Real", "Rational", "Integral"))):
        for n in names:
            a = getattr(mod, n, None)
            if isinstance(a, abc.ABCMeta):
                out[f"{mod.__name__}.{n}"] = a
    return out


ABCS = _abcs()


def typed_class(cls) -> bool:
    """Whether a class of this side crosses as a stand-in type (the peer's own stand-ins and
    exception and enum classes cross as they always did)."""
    import enum
    return (isinstance(cls, type) and getattr(cls, "__module__", None) not in _NOT_TYPED_MODULES
            and not issubclass(cls, (BaseException, enum.Enum, Remote))
            and type(cls) is not RemoteClass)


def class_info(codec, cls: type) -> dict:
    """The submission side's account of one of its classes, sent with its first handle."""
    bases = [codec.encode(b) for b in cls.__bases__[:MAX_BASES] if typed_class(b)]
    own = vars(cls)
    abcs = []
    for name, a in ABCS.items():
        try:
            if issubclass(cls, a):
                abcs.append(name)
        except Exception:  # noqa: BLE001  a class whose metaclass refuses the question
            pass
    functions = [[n, codec.encode(f)] for n, f in list(own.items())
                 if type(f) is types.FunctionType and (n == "__init__" or not n.startswith("_"))]
    return {"b": bases, "a": abcs, "f": functions[:MAX_OWN],
            "o": sorted(n for n in own if n in FORWARDED),
            "p": [n for n in DESCRIPTOR if _defines(cls, n)],
            "h": getattr(cls, "__hash__", None) is not None,
            "c": _defines(cls, "__call__"),
            "m": str(getattr(cls, "__module__", "") or "")[:100]}


def _defines(cls: type, name: str) -> bool:
    """Whether the class or a base (not object, not the metaclass) has `name`, not None."""
    for k in cls.__mro__:
        if name in vars(k):
            return vars(k)[name] is not None
    return False


# what Python puts in a class body that is not the class's own to send
_CLASS_SETUP = frozenset({"__module__", "__qualname__", "__classcell__", "__dict__",
                          "__weakref__", "__orig_bases__", "__static_attributes__",
                          "__firstlineno__"})


class RemoteClass(type):
    """The metaclass of the stand-in types: calling one constructs remotely, its attributes are
    the remote class's. Instance checks are type's own (never asked of the peer).

    A class statement of the tests that subclasses a stand-in (`class Torch(solution.Backend,
    name="torch"): def forward(self, x): ...`) makes the subclass over there, where the
    student's `__init_subclass__` sees it, from the body's functions (installed as methods that
    call the test's own, classes.make_subclass) and values; the class statement's name is bound
    to that remote class's stand-in type, so its instances are made there, are instances of it
    and of the student's base, and their methods run the test's code."""

    def __new__(mcls, name, bases, ns, /, **kwargs):
        if "_rc_ep" in ns:  # a stand-in type itself (make_class)
            return super().__new__(mcls, name, bases, ns)
        return _subclass_across(name, bases, ns, kwargs)

    def __init__(cls, *args, **kwargs):
        pass  # kwargs of a class statement went to the remote class's __init_subclass__

    def __call__(cls, *args, **kwargs):
        ep = cls.__dict__.get("_rc_ep")
        if ep is None:
            raise TypeError(f"{cls.__name__}: a class of the tests that subclasses a class of "
                            "the submission cannot be instantiated across the call proxy")
        return ep.request("call", cls._rc_hid, *args, **kwargs)

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__") or name.startswith("_rc_"):
            raise AttributeError(name)
        return cls._rc_ep.request("getattr", cls._rc_hid, name)

    def __setattr__(cls, name, value):
        if name.startswith("__") and name.endswith("__") or name.startswith("_rc_"):
            return type.__setattr__(cls, name, value)
        cls._rc_ep.request("setattr", cls._rc_hid, name, value)

    def __delattr__(cls, name):
        if name.startswith("__") and name.endswith("__") or name.startswith("_rc_"):
            return type.__delattr__(cls, name)
        cls._rc_ep.request("delattr", cls._rc_hid, name)

    # class-level protocols (`Cls[int]`, iterating a registry class) are the remote class's
    # (remote.container_protocol, below); a class itself is true, as in one process
    def __bool__(cls):
        return True


for _n, _f in container_protocol(attrgetter("_rc_ep", "_rc_hid"), "class").items():
    setattr(RemoteClass, _n, _f)


def _subclass_across(name: str, bases: tuple, ns: dict, kwargs: dict) -> type:
    ep = next((b.__dict__.get("_rc_ep") for b in bases if type(b) is RemoteClass), None)
    if ep is not None and not ep.guarded:  # the submission's side: a class of the tests'
        raise TypeError(f"class {name}: a class of the tests cannot be subclassed by the "
                        "submission across the call proxy")
    if ep is None or not all(type(b) is RemoteClass and b.__dict__.get("_rc_ep") is ep
                             for b in bases):
        raise TypeError(f"class {name}: a class of the tests can subclass the submission's "
                        "classes only, not mix them with its own or with another's")
    body: dict = {}
    props: dict = {}
    for k, v in ns.items():
        if k in _CLASS_SETUP:
            continue
        if isinstance(v, property):  # a property of the test's functions, installed there
            props[k] = [v.fget, v.fset, v.fdel]
        else:
            body[k] = v
    meta = {"module": ns.get("__module__"), "qualname": ns.get("__qualname__")}
    cls = ep.request("subclass", None, name, list(bases), body, props, kwargs, meta)
    if type(cls) is not RemoteClass:
        raise TypeError(f"class {name}: the submission did not make the subclass")
    cell = ns.get("__classcell__")
    if cell is not None:  # `super()` and `__class__` in the test's methods name this class
        cell.cell_contents = cls
    return cls


def _get(self, instance, owner=None):
    return self._ep.request("callm", self._hid, "__get__", instance, owner)


def _set(self, instance, value):
    self._ep.request("callm", self._hid, "__set__", instance, value)


def _delete(self, instance):
    self._ep.request("callm", self._hid, "__delete__", instance)


def _set_name(self, owner, attr):
    self._ep.request("callm", self._hid, "__set_name__", owner, attr)


_DESCRIPTORS = dict(zip(DESCRIPTOR, (_get, _set, _delete, _set_name)))
for _n, _f in _DESCRIPTORS.items():
    _f.__name__ = _f.__qualname__ = _n


def stand_in_bases(codec, raw_bases: list, is_callable: bool) -> list[type]:
    """The bases of a stand-in type, from the peer's classes as `class_info` told them: only
    the peer's own stand-in types (never a class of this side), callable when its instances
    are, Remote when there is none."""
    bases: list[type] = []
    for b in raw_bases:
        t = codec.decode(b)
        if type(t) is RemoteClass and t.__dict__.get("_rc_ep") is codec and t not in bases:
            bases.append(t)
    if is_callable and not any(issubclass(b, _Callable) for b in bases):
        bases.append(_Callable)
    if not bases:
        bases.append(Remote)
    return bases


def make_class(codec, hid: int, name: str, info) -> type:
    """The stand-in type for the peer's class `hid`, from what `class_info` told."""
    if not isinstance(info, dict):
        raise WireError("a malformed class")
    raw_bases = info.get("b", [])
    names = [info.get(k, []) for k in ("a", "o", "p")]
    if not isinstance(raw_bases, list) or len(raw_bases) > MAX_BASES or \
            not all(isinstance(x, list) and all(isinstance(n, str) for n in x) for x in names):
        raise WireError("a malformed class")
    abcs, own, desc = names
    bases = stand_in_bases(codec, raw_bases, info.get("c") is True)
    ns: dict = {"__slots__": (), "__qualname__": name, "__doc__": None, "__test__": False,
                "_rc_ep": codec, "_rc_hid": hid}
    module = info.get("m")
    ns["__module__"] = module if isinstance(module, str) and module else "solution"
    for n in own:
        if n in FORWARDED and n != "__hash__":
            ns[n] = getattr(_Callable if n == "__call__" else Remote, n)
    # always set: a body with `__eq__` and no `__hash__` would make it None
    ns["__hash__"] = vars(Remote)["__hash__"] if info.get("h", True) is not False else None
    for n in desc:
        if n in _DESCRIPTORS:
            ns[n] = _DESCRIPTORS[n]
    functions = info.get("f", [])
    if not isinstance(functions, list) or len(functions) > MAX_OWN:
        raise WireError("a malformed class")
    for item in functions:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                and item[0].isidentifier() and (item[0] == "__init__"
                                                 or not item[0].startswith("_"))):
            raise WireError("a malformed class")
        if item[0] not in ns:
            ns[item[0]] = OwnFunction(codec, hid, item[0], codec.decode(item[1]))
    try:
        cls = RemoteClass(name if name.isidentifier() else "Object", tuple(bases), ns)
    except TypeError:  # bases in an order no MRO can have: the class alone
        cls = RemoteClass(name if name.isidentifier() else "Object", (Remote,), ns)
    for n in abcs:
        a = ABCS.get(n)
        if isinstance(a, abc.ABCMeta):
            a.register(cls)  # type: ignore[arg-type]
    return cls


class OwnFunction:
    """A function of the remote class's own body, in the stand-in type's: `"m" in
    Cls.__dict__` reads as it does there, and `super().m(...)` in a test's subclass
    (`class Mine(solution.Base)`) reaches the student's `Base.m`, as in one process. Read on
    an instance the normal way it is the usual method request (the object's own lookup there,
    so what a test set on the class or instance is what runs); read through `super()` it is
    the class's function, called with the object. Read on the class it is the class's
    attribute as it is there now; put back (monkeypatch's undo) it crosses as the function it
    was when the class was told."""

    __slots__ = ("ep", "owner", "name", "original")

    def __init__(self, ep, owner: int, name: str, original):
        self.ep, self.owner, self.name, self.original = ep, owner, name, original

    def __get__(self, obj, cls=None):
        if obj is None:
            hid = cls.__dict__.get("_rc_hid", self.owner) if cls is not None else self.owner
            return self.ep.request("getattr", hid, self.name)
        if _resolves_to(type(obj), self.name, self):
            return Method(obj, self.name)
        return functools.partial(self._super_call, obj)

    def __call__(self, *args, **kwargs):
        # taken raw from the class's __dict__ (`orig = Cls.__dict__["m"]`, then `orig(self, g)`
        # from a wrapper the test set on the class): the function it was, not the wrapper
        return self.original(*args, **kwargs)

    def _super_call(self, obj, *args, **kwargs):
        fn = self.ep.request("getattr", self.owner, self.name)
        return fn(obj, *args, **kwargs)


def _resolves_to(cls: type, name: str, slot) -> bool:
    for k in cls.__mro__:
        if name in k.__dict__:
            return k.__dict__[name] is slot
    return False


class AttributeDict(MutableMapping):
    """`obj.__dict__` of the peer's object: its own attributes, by request."""

    __slots__ = ("_of",)

    def __init__(self, of: Remote):
        self._of = of

    def __getitem__(self, key):
        return self._of._ep.request("vget", self._of._hid, key)

    def __setitem__(self, key, value):
        self._of._ep.request("vset", self._of._hid, key, value)

    def __delitem__(self, key):
        self._of._ep.request("vdel", self._of._hid, key)

    def __iter__(self):
        keys = self._of._ep.request("vkeys", self._of._hid)
        return iter(keys if isinstance(keys, list) else [])

    def __len__(self):
        return len(list(iter(self)))

    def __repr__(self):
        return f"<attributes of {self._of._name}>"


# ---- copies and pickles of the peer's objects -------------------------------------------------

_PICKLED: list = []
MAX_PICKLED = 10_000


def pickled(r: Remote):
    """The reduction of a stand-in: the peer makes the pickle round trip of its object in its
    own process; this side's pickle holds the copy's number, and loading it gives the copy's
    stand-in. Nothing the peer pickled is ever unpickled here."""
    if len(_PICKLED) >= MAX_PICKLED:
        raise TypeError("too many pickles of the submission's objects")
    _PICKLED.append(r._ep.request("pickled", r._hid))
    return (unpickled, (len(_PICKLED) - 1,))


def unpickled(n: int):
    if type(n) is not int or not 0 <= n < len(_PICKLED):
        raise ValueError("a pickle of no copy of the submission's objects")
    return _PICKLED[n]
