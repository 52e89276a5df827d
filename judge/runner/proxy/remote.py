"""The local stand-ins for the peer's objects. One stand-in per remote object and connection
(the endpoint keeps a weak map handle -> stand-in), so `is` holds for an object read twice, for
singletons and for enum members. A stand-in decides nothing by asking the peer that a plain value
could settle here: a `Remote` compared with a plain value is never asked (`==` is identity, `<`
a TypeError)."""

from __future__ import annotations

from operator import attrgetter

from .metadata import dunder
from .metadata import install as install_metadata

UNARY = {"__neg__", "__pos__", "__abs__", "__invert__", "__float__", "__int__", "__index__",
         "__round__", "__reversed__", "__enter__"}
BINARY = {f"__{p}{n}__" for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                  "matmul", "and", "or", "xor", "lshift", "rshift")
          for p in ("", "r")}
ORDER = {"__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"}
OPS = UNARY | BINARY | ORDER | {"__exit__"}


def _op(name):
    def method(self, *args):
        if name in ORDER and not all(isinstance(a, Remote) and a._ep is self._ep for a in args):
            return NotImplemented  # a plain value is never compared by the other side
        if "e" in self._kinds and name in ("__eq__", "__ne__"):
            # an enum member is equal only to itself, and its stand-in is unique: no question
            return (args[0] is self) == (name == "__eq__")
        if name == "__exit__" and len(args) == 3:
            # a traceback stays here: its frames hold the test's locals (and a generator's
            # `throw` takes only a real one or None)
            args = (args[0], args[1], None)
        return self._ep.request(name, self._hid, *args)
    method.__name__ = name
    return method


def container_protocol(handle, of: str) -> dict:
    """`iter`, `len`, `[]` and `in` forwarded to the peer's object or class (`of`), alike for
    an object's stand-in (Remote) and a class's (peertypes.RemoteClass: iterating a registry
    class, `Cls[int]`, answered by its metaclass over there). `handle(stand_in)` is its
    (endpoint, handle number). The peer's answers are held here to what Python's own `len`
    and `in` give, whatever its serving side was made to send."""
    def __iter__(self):
        ep, hid = handle(self)
        return ep.request("iter", hid)

    def __len__(self):
        ep, hid = handle(self)
        n = ep.request("len", hid)
        if type(n) is not int or n < 0:
            raise TypeError(f"len() of the submission's {of} is not a non-negative int")
        return n

    def __getitem__(self, k):
        ep, hid = handle(self)
        return ep.request("getitem", hid, k)

    def __contains__(self, x):
        ep, hid = handle(self)
        return ep.request("contains", hid, x) is True

    return {f.__name__: f for f in (__iter__, __len__, __getitem__, __contains__)}


class Remote:
    __slots__ = ("_ep", "_hid", "_kinds", "_name", "_methods", "_snap", "__weakref__")

    @classmethod
    def _make(cls, ep, hid, kinds, name, methods=frozenset(), typ=None):
        # typ: the stand-in type of the object's class (peertypes.py), when the peer told it
        r = object.__new__(typ if typ is not None else _Callable if "c" in kinds else cls)
        object.__setattr__(r, "_ep", ep)
        object.__setattr__(r, "_hid", hid)
        object.__setattr__(r, "_kinds", kinds)
        object.__setattr__(r, "_name", name)
        object.__setattr__(r, "_methods", methods)
        # (the peer's epoch, {name: value}): the object's plain attributes (snapshots.py)
        object.__setattr__(r, "_snap", None)
        return r

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            return dunder(self, name)  # metadata.py: which dunders, which side
        if name in self._methods:
            # a method of the object's class: called, it is one request, not a read and a call
            return Method(self, name)
        snap = self._snap
        if snap is not None and name in snap[1] and snap[0] == self._ep.epoch():
            return snap[1][name]  # nothing of the tests' has run since it was sent
        return self._ep.request("getattr", self._hid, name)

    def __setattr__(self, name, value):
        self._ep.request("setattr", self._hid, name, value)

    @property
    def __dict__(self):  # type: ignore[override]  # (a stand-in has no __dict__ of its own)
        # the object's own attributes, by request (a descriptor's `instance.__dict__[k] = v`)
        from .peertypes import AttributeDict
        if not self._ep.guarded and self._hid in self._ep.meta:
            # a function or class of the tests', whose attributes that side refuses:
            # missing, as `functools.wraps(test_function)` expects (metadata.py)
            raise AttributeError("__dict__")
        return AttributeDict(self)

    def __delattr__(self, name):
        self._ep.request("delattr", self._hid, name)

    # __iter__, __len__, __getitem__, __contains__: container_protocol, below
    def __next__(self):
        return self._ep.request("next", self._hid)

    def __setitem__(self, k, v):
        self._ep.request("setitem", self._hid, k, v)

    def __delitem__(self, k):
        self._ep.request("delitem", self._hid, k)

    def __bool__(self):
        return self._ep.request("bool", self._hid) is True

    def __hash__(self):
        if "e" in self._kinds:
            return hash((Remote, self._hid))  # identity, as its equality
        h = self._ep.request("hash", self._hid)
        if type(h) is not int:
            raise TypeError("hash() of the submission's object is not an int")
        return h

    def __repr__(self):
        try:
            text = self._ep.request("repr", self._hid)
        except Exception:
            text = None
        return text if isinstance(text, str) else f"<{self._name}>"

    def __str__(self):
        text = self._ep.request("str", self._hid)
        return text if isinstance(text, str) else f"<{self._name}>"

    def __await__(self):
        return self._ep.await_remote(self._hid).__await__()

    # copies are made where the object is, by its own class (the guarded side refuses)
    def __copy__(self):
        return self._ep.request("copy", self._hid)

    def __deepcopy__(self, memo):
        return self._ep.request("deepcopy", self._hid)

    def __reduce_ex__(self, protocol):
        # `pickle.loads(pickle.dumps(obj))`: the round trip made over there, by the peer's own
        # pickle; what this side's pickle holds is only a number of the copy's stand-in here
        from .peertypes import pickled
        return pickled(self)


for _n in sorted(OPS):
    setattr(Remote, _n, _op(_n))
for _n, _f in container_protocol(attrgetter("_ep", "_hid"), "object").items():
    setattr(Remote, _n, _f)
setattr(Remote, "__hash__", vars(Remote)["__hash__"])  # defining __eq__ unsets it otherwise


class _Callable(Remote):
    __slots__ = ()

    def __call__(self, *args, **kwargs):
        return self._ep.request("call", self._hid, *args, **kwargs)


install_metadata(Remote, _Callable)


class Method:
    """`obj.name` for a method of the peer object's class, before it is called. Used otherwise
    (an attribute, a repr), it reads the attribute for real."""

    __slots__ = ("_of", "_attr")

    def __init__(self, of: Remote, attr: str):
        self._of, self._attr = of, attr

    def __call__(self, *args, **kwargs):
        return self._of._ep.request("callm", self._of._hid, self._attr, *args, **kwargs)

    def _resolve(self):
        return self._of._ep.request("getattr", self._of._hid, self._attr)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return getattr(self._resolve(), name)

    def __eq__(self, other):
        return isinstance(other, Method) and other._of is self._of and other._attr == self._attr

    def __hash__(self):
        return hash((Method, id(self._of), self._attr))

    def __repr__(self):
        return f"<method {self._attr} of {self._of._name}>"


# ---- enum members with a plain value (class Status(str, Enum)) ----------------------------

_ENUM_TYPES: dict[type, type] = {}
ENUM_CLASSES: set = set()


def enum_value(ep, hid: int, value, name: str):
    """A local value of the member's plain type (so `== "running"` holds as it does there),
    unique per member (so `is` holds), that crosses back as the member itself."""
    base = type(value)
    cls = _ENUM_TYPES.get(base)
    if cls is None:
        cls = type(f"Remote{base.__name__.capitalize()}Member", (base,), {
            "__repr__": lambda self: f"<{self._name}: {base(self)!r}>",
        })
        _ENUM_TYPES[base] = cls
        ENUM_CLASSES.add(cls)
    v = cls(value)
    v._ep, v._hid, v._name = ep, hid, name
    return v


# ---- lists, dicts and sets read as an object's attribute ---------------------------------

def _forwarding(base: type, names: tuple[str, ...]):
    """A copy of the peer's container that also makes each change to the peer's own, so
    `r.output_ids.append(7)` changes the request's list, as it does in one process."""
    body = {}
    for n in names:
        def method(self, *args, _n=n, _f=getattr(base, n)):
            self._ep.request("callm", self._hid, _n, *args)
            return _f(self, *args)
        method.__name__ = n
        body[n] = method
    return type(f"Remote{base.__name__.capitalize()}", (base,), body)


HeldList = _forwarding(list, ("append", "extend", "insert", "pop", "remove", "clear",
                              "reverse", "__setitem__", "__delitem__", "__iadd__"))
HeldDict = _forwarding(dict, ("__setitem__", "__delitem__", "pop", "popitem", "setdefault",
                              "update", "clear"))
HeldSet = _forwarding(set, ("add", "discard", "remove", "pop", "clear", "update",
                            "difference_update", "intersection_update", "__ior__"))
HELD: dict[type, type] = {list: HeldList, dict: HeldDict, set: HeldSet}
HELD_TYPES = (HeldList, HeldDict, HeldSet)


def held(ep, hid: int, value):
    out = HELD[type(value)](value)
    out._ep, out._hid = ep, hid
    return out
