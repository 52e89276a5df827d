"""Values to and from the wire's tagged JSON data (wire.py), one endpoint's view: its own objects
cross as handles it numbers (`export`), the peer's come back as stand-ins (remote.py), exceptions
by type and message (exceptions.py)."""

from __future__ import annotations

import collections.abc
import enum
import inspect
import threading
import types
import weakref

from . import exceptions, standins, testtypes
from .capabilities import Guard, Kind
from .classes import as_method
from .exceptions import builtin_base
from .identity import Identities
from .inplace import snapshot
from .npvalues import NP_TAGS, decode_np, encode_np
from .peertypes import OwnFunction, RemoteClass, class_info, typed_class
from .protocol import value_tag
from .remote import ENUM_CLASSES, HELD_TYPES, Method, Remote
from .snapshots import plain_attributes
from .stdvalues import STD_TAGS, decode_std, encode_std
from .typeforms import decode_form, encode_form
from .views import rebuild, view_spec
from .wire import (
    MAX_DEPTH,
    WireError,
    attached,
    attachment,
    decode_array,
    decode_tensor,
    encode_array,
    encode_tensor,
    is_ndarray,
    is_numpy_scalar,
    is_tensor,
)

MAX_HANDLES = 500_000
MAX_TEXT = 4000
MAX_TYPES = 10_000
MAX_METHODS = 200
MAX_LENT = 10_000
_SCALARS = (int, float, str, bool, type(None))
_PLAIN = (bool, int, float, str)
_STANDINS = (Remote, *HELD_TYPES)


class ProxyRefused(TypeError):
    """The submission asked for something of the trusted side it may not have."""


def _plain_base(v):
    for base in _PLAIN:
        if isinstance(v, base):
            return base(v) if base is not str else str.__str__(v)
    return v


def _name(v) -> str:
    n = getattr(v, "__name__", None) if isinstance(v, (type, types.FunctionType)) else None
    return str(n or type(v).__name__)[:100]


def _methods(cls: type) -> list[str]:
    """The public plain functions of a class and its bases (builtins' own are not asked for)."""
    names: dict[str, None] = {}
    for k in cls.__mro__:
        if k.__module__ == "builtins":
            continue
        for n, a in vars(k).items():
            if isinstance(a, types.FunctionType) and not n.startswith("_"):
                names.setdefault(n)
    return list(names)[:MAX_METHODS]


class Codec:
    def __init__(self, guarded: bool, guard: Guard | None = None):
        self.guarded = guarded
        # the trusted side's capability guard (capabilities.py): what may become a handle,
        # and the kind of each handle given, which decides what it answers
        self.guard = (guard or Guard()) if guarded else None
        self.kinds: dict[int, Kind] = {}
        self.objects: dict[int, object] = {}     # handle -> my object the peer holds
        self.handles: dict[int, int] = {}        # id(my object) -> handle
        # handle -> the peer's object's stand-in, one per object, kept as long as the peer
        # keeps the object (its handles live until the run ends): `id()` of a stand-in is
        # stable while its object lives, as in one process (a weak map gave a node walked
        # twice two ids)
        self.remotes: dict[int, Remote] = {}
        self.pairs = Identities()  # arrays and tensors that crossed (identity.py)
        self.members: dict[int, object] = {}     # handle -> a peer enum member with a value
        self.made = 0                            # stand-ins made, for the cap
        self.mirrors: dict[int, type] = {}       # handle -> local class for a peer exception class
        self._mirror_of: dict[type, int] = {}
        self.type_ids: dict[type, int] = {}      # my classes whose methods the peer was told
        self.peer_types: dict[int, frozenset] = {}
        # the peer's classes as local stand-in types (peertypes.py): handle -> type, and the
        # class of the peer's instances by class number; my classes whose account was sent
        self.peer_classes: dict[int, type] = {}
        self.peer_type_class: dict[int, type] = {}
        self.classes_told: set[int] = set()
        # functions installed on my classes for the peer's (classes.py), both ways
        self.methods: dict[int, types.FunctionType] = {}
        self.wrapped: dict[types.FunctionType, Remote] = {}
        self.displaced: dict[tuple[type, str], object] = {}  # (class, name) -> its descriptor
        self.class_had: dict[tuple[type, str], object] = {}  # what it held before a set
        # the peer's TypedDicts rebuilt here (typeforms.py): its handle -> mine, and back
        self.typeddicts: dict[int, type] = {}
        self.typeddict_of: dict[type, int] = {}
        self.module_had: dict[str, object] = {}  # my module's names before the peer set them
        # arrays held in attributes of my objects, read by the peer, that it may write back
        # into (numbered apart from handles: no request can name one), and the peer's such
        # arrays read here during the request being served: number -> (array, snapshot)
        self.lent_out: dict[int, object] = {}
        self._lent_ids: dict[int, int] = {}
        self.lent_in: dict[int, tuple] = {}
        # handle -> (qualified name, docstring) of a function or class of the peer's (metadata.py)
        self.meta: dict[int, tuple] = {}
        # the trusted side's threads are served concurrently (endpoint.py): a handle's number
        # must be given once
        self.export_lock = threading.Lock()
        self.gen_stubs: dict[int, types.FunctionType] = {}  # handle -> served.gen_stub
        # the trusted side: what is being encoded may carry its objects' plain attributes
        # (snapshots.py; set by the endpoint only where the tests' code stays still)
        self.snap_ok = False

    def epoch(self) -> int:
        """Messages this side has sent: a snapshot of the peer's is good while it is the same
        (the endpoint counts its channels' frames; a bare codec sends nothing)."""
        return 0

    # ---- mine, out ------------------------------------------------------------------------

    def export(self, obj) -> int:
        key = id(obj)
        hid = self.handles.get(key)
        if hid is None:
            kind = self.guard.kind(obj) if self.guard is not None else None
            if self.guard is not None and kind is None:
                raise ProxyRefused(f"a {_type_name(obj)} of the tests cannot be handed to the "
                                   "submission")
            with self.export_lock:
                hid = self.handles.get(key)
                if hid is None:
                    if len(self.objects) >= MAX_HANDLES:
                        raise WireError("too many objects handed over")
                    hid = len(self.objects) + 1
                    self.objects[hid], self.handles[key] = obj, hid
                    if kind is not None:
                        self.kinds[hid] = kind
        return hid

    def encode(self, v, depth: int = 0):
        if depth > MAX_DEPTH:
            raise ValueError(f"a value nested deeper than {MAX_DEPTH} cannot cross")
        t = type(v)
        if v is None or t is bool or t is int or t is float or t is str:
            return v
        d = depth + 1
        # (exact types first: the peer's held containers are subclasses, and go back below)
        if t is list or t is tuple:
            tag = "L" if t is list else "T"
            if all(type(x) in _SCALARS for x in v):  # the common case, at C speed
                return {tag: list(v)}
            return {tag: [self.encode(x, d) for x in v]}
        if t is dict:
            return {"D": [[self.encode(k, d), self.encode(x, d)] for k, x in v.items()]}
        if t in (set, frozenset):
            return {"S" if t is set else "F": [self.encode(x, d) for x in v]}
        if t in (bytes, bytearray):
            return {"B" if t is bytes else "BA": attachment(bytes(v))}
        back = self._encode_peers(v, t, depth)
        if back is not None:
            return back
        if is_ndarray(v):
            return self._encode_array(v)
        if is_numpy_scalar(v):  # np.float32(1.5) stays one (npvalues.py)
            npv = encode_np(v, t)
            return self.encode(v.item(), d) if npv is None else npv
        if is_tensor(v):
            return self._encode_tensor(v)
        return self._encode_other(v, t, d)

    def _encode_peers(self, v, t, depth: int) -> dict | None:
        """The peer's own objects, classes and functions go back as themselves (their
        handles); None for anything else."""
        if t is Method and v._of._ep is self:
            return {"H": v._of._hid, "m": v._attr}
        if (isinstance(v, _STANDINS) or t in ENUM_CLASSES) and v._ep is self:
            return {"H": v._hid}
        if isinstance(v, type) and v in self._mirror_of:
            return {"H": self._mirror_of[v]}
        if t is types.FunctionType and (sr := v.__dict__.get("_served_remote")) is not None \
                and sr._ep is self:
            return {"H": sr._hid}  # the peer's generator function (served.gen_stub)
        if t is RemoteClass and v.__dict__.get("_rc_ep") is self:
            return {"H": v._rc_hid}
        if t is OwnFunction and v.ep is self:
            return self.encode(v.original, depth)  # put back: the function it was
        return None

    def _encode_array(self, v) -> dict:
        wire = encode_array(v)
        arr = {"A": wire}
        if not self.guarded and not self.pairs.paired(v) and \
                (spec := view_spec(self, v)) is not None:
            arr["V"] = spec  # a view of an array the tests passed (views.py)
        else:
            self.pairs.outgoing(v, wire, arr)  # its identity (identity.py)
        return arr

    def _encode_tensor(self, v) -> dict:
        wire = encode_tensor(v)
        out = {"X": wire}
        self.pairs.outgoing(v, wire, out)
        if self.guarded and type(v).__name__ == "Parameter":
            # a model's parameter, however reached (`m.parameters()`, `named_parameters()`):
            # what the submission sets on it (`p.requires_grad_(False)`, values) is set on
            # the model's, as reading it as an attribute allows (encode_lent)
            self._lend(v, out)
        return out

    def _encode_other(self, v, t, d: int):
        """Enum members, subclasses of plain values, a class's static and class methods,
        type forms and the standard library's values; a handle for anything else."""
        if isinstance(v, types.ModuleType) and self.guarded:
            raise ProxyRefused("a module of the tests cannot be handed to the submission")
        if isinstance(v, enum.Enum):
            return self._encode_member(v)
        if isinstance(v, _PLAIN):  # subclasses travel as their plain value
            return self.encode(_plain_base(v), d)
        if t is staticmethod or t is classmethod:  # for a class of the peer's (classes.py)
            return {"SM" if t is staticmethod else "CM": self.encode(v.__func__, d)}
        if t is types.FunctionType and v in self.wrapped:
            return self.encode(self.wrapped[v], d)  # the peer's own function, installed here
        form = encode_form(self, v, d)  # list[int], Optional[...], a TypedDict (typeforms.py)
        if form is not None:
            return form
        std = encode_std(v, t)
        if std is None:  # np.int32 (the class), a np.dtype
            std = encode_np(v, t)
        return self._handle(v) if std is None else std

    def _handle(self, v) -> dict:
        kinds = ""
        if callable(v):
            kinds += "c"
        if type(v) is types.FunctionType:  # set on a class, it binds (classes.py)
            kinds += "f"
            if not self.guarded and v.__code__.co_flags & inspect.CO_GENERATOR:
                kinds += "g"  # a generator function, for what tells one (served.py)
        # not asyncio.iscoroutine: before 3.12 it takes a plain generator for one, which
        # then could not be iterated in a sync test
        coroutine = isinstance(v, (types.CoroutineType, collections.abc.Coroutine))
        if hasattr(type(v), "__await__") or coroutine:
            kinds += "a"
        if coroutine:
            kinds += "o"
        hid = self.export(v)
        out: dict = {"R": hid, "k": kinds, "n": _name(v)}
        if self.guarded and isinstance(v, (type, types.FunctionType)):
            # what `functools.wraps` copies from a function of the tests' handed over; the
            # peer never asks a dunder of this side (metadata.py)
            out["q"] = str(getattr(v, "__qualname__", ""))[:200]
            doc = v.__doc__ if isinstance(v.__doc__, str) else None
            if doc is not None:
                out["d"] = doc[:MAX_TEXT]
        if isinstance(v, type) and issubclass(v, BaseException):
            out["x"] = builtin_base(v).__name__
        elif not self.guarded and typed_class(v):
            hid = self.export(v)
            if hid not in self.classes_told:  # the first time: what the type is
                self.classes_told.add(hid)
                out["t"] = class_info(self, v)
        elif not self.guarded and not isinstance(v, (type, types.FunctionType,
                                                     types.ModuleType)):
            self._tell_methods(type(v), out)
        elif self.guarded:  # the tests' classes as types over there (testtypes.py)
            testtypes.tell(self, v, out)
            if self.snap_ok and self.kinds.get(hid) is Kind.OBJECT and \
                    (attrs := plain_attributes(v)) is not None:
                out["v"] = attrs
        return out

    def _tell_methods(self, cls: type, out: dict) -> None:
        tid = self.type_ids.get(cls)
        if tid is None:
            if len(self.type_ids) >= MAX_TYPES:
                return
            tid = self.type_ids[cls] = len(self.type_ids) + 1
            out["ym"] = _methods(cls)
            if typed_class(cls):
                out["yc"] = self.encode(cls)
        out["y"] = tid

    def _encode_member(self, v: enum.Enum) -> dict:
        """An enum member crosses as a handle, whatever its value's type: the same member is
        the same object on the other side, and the value it has (str, int) is its own too."""
        out = {"R": self.export(v), "k": "e", "n": f"{type(v).__name__}.{v.name}"[:100]}
        plain = _plain_base(v)
        if type(plain) in _PLAIN and plain is not v:
            out["e"] = plain
        return out

    def encode_lent(self, value) -> dict:
        """An array an attribute of my object holds: its value, and the number under which
        the peer may send back what it wrote into it during the call it serves."""
        out = self.encode(value)
        self._lend(value, out)
        return out

    def _lend(self, value, out: dict) -> None:
        num = self._lent_ids.get(id(value))
        if num is not None and lent_object(self.lent_out[num]) is not value:
            num = None  # that id's array died and another has it now
        if num is None:
            if len(self.lent_out) >= MAX_HANDLES:
                return
            num = self._lent_ids[id(value)] = len(self.lent_out) + 1
            # the submission's arrays the tests read (borrowed.py) are not kept alive by it
            self.lent_out[num] = value if self.guarded else weakref.ref(value)
        out["r"] = num

    def encode_held(self, value) -> dict:
        """A list, dict or set an attribute holds: its value, and a handle for changing it."""
        out = self.encode(value)
        out["r"] = self.export(value)
        return out

    # ---- the peer's, in ---------------------------------------------------------------

    # the peer's handles as stand-ins (standins.py), exceptions both ways (exceptions.py)
    _hid = standins.hid
    _count = standins.count
    _held = standins.held_value
    _remote = standins.remote
    _peer_methods = standins.peer_methods
    _peer_class = standins.peer_class
    _mirror = exceptions.mirror
    encode_exc = exceptions.encode_exc
    decode_exc = exceptions.decode_exc

    def decode(self, v, depth: int = 0):
        if depth > MAX_DEPTH + 2:
            raise WireError("a value nested too deeply")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            raise WireError("a bare list in a value")
        if not isinstance(v, dict) or len(v) < 1:
            raise WireError("a malformed value")
        value_tag(v, "submission" if self.guarded else "trusted")  # exactly one declared tag
        d = depth + 1
        if "L" in v or "T" in v or "S" in v or "F" in v:
            return self._decode_sequence(v, d)
        if "D" in v:
            return self._decode_dict(v, d)
        if "B" in v:
            return bytes(attached(v["B"]))
        if "BA" in v:
            return bytearray(attached(v["BA"]))
        if "A" in v or "X" in v:
            return self._decode_array(v)
        if "SM" in v or "CM" in v:
            return self._decode_class_method(v, d)
        if "H" in v:
            return self._decode_handle(v)
        if "R" in v:
            return self._remote(v)
        if "TF" in v:
            return decode_form(self, v)
        if any(k in v for k in STD_TAGS):
            return decode_std(v)
        if any(k in v for k in NP_TAGS):
            return decode_np(v)
        raise WireError("a value of no known kind")

    def _decode_sequence(self, v: dict, d: int):
        items = v.get("L", v.get("T", v.get("S", v.get("F"))))
        if not isinstance(items, list):
            raise WireError("a malformed sequence")
        seq = items if all(type(x) in _SCALARS for x in items) else \
            [self.decode(x, d) for x in items]
        if "L" in v:
            return self._held(seq, v) if "r" in v else seq
        if "T" in v:
            return tuple(seq)
        try:
            items_set = set(seq) if "S" in v else frozenset(seq)
        except TypeError:
            raise WireError("a set of unhashable items") from None
        return self._held(items_set, v) if "r" in v and "S" in v else items_set

    def _decode_dict(self, v: dict, d: int) -> dict:
        pairs = v["D"]
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2
                                                  for p in pairs):
            raise WireError("a malformed dict")
        try:
            out = {self.decode(k, d): self.decode(x, d) for k, x in pairs}
        except TypeError:
            raise WireError("a dict with an unhashable key") from None
        return self._held(out, v) if "r" in v else out

    def _decode_array(self, v: dict):
        """An array or tensor: a view rebuilt, the caller's own one again, or one lent (its
        writes go back: inplace.py, borrowed.py)."""
        if "r" in v and not self.guarded and self._hid(v) in self.lent_in:
            return self.lent_in[self._hid(v)][0]  # read again: the copy changed so far
        wire = v["A"] if "A" in v else v["X"]
        a = decode_array(wire) if "A" in v else decode_tensor(wire)
        if "V" in v and "A" in v and self.guarded:
            return rebuild(self, v["V"], a)
        arrived = a
        if "i" in v or "o" in v:  # the caller's own array, or the copy made before
            a = self.pairs.incoming(v, wire, a)
        if "r" not in v:
            return a
        # lent: compared with what the peer holds (`arrived`), so this side's own writes
        # since the array last crossed go back too, not only those made from now on
        before = arrived if a is not arrived else snapshot(a)
        if not self.guarded and len(self.lent_in) < MAX_LENT:
            self.lent_in[self._hid(v)] = (a, before)
        elif self.guarded and (lent := getattr(self, "borrowed", None)):
            lent.take(self._hid(v), a, before)  # the submission's array (borrowed.py)
        return a

    def _decode_class_method(self, v: dict, d: int):
        fn = self.decode(v.get("SM", v.get("CM")), d)
        if not callable(fn):
            raise WireError("a staticmethod or classmethod of no function")
        if "SM" in v:
            return staticmethod(fn)
        return classmethod(as_method(self, fn) if isinstance(fn, Remote) else fn)

    def _decode_handle(self, v: dict):
        """One of my objects the peer holds, or (``m``) a method of it."""
        obj = self.objects.get(v["H"]) if isinstance(v["H"], int) else None
        if obj is None and v["H"] not in self.objects:
            raise WireError("a handle this side never gave")
        if "m" in v:
            if self.guarded or not isinstance(v["m"], str):
                raise WireError("a method this side never named")
            return getattr(obj, v["m"])
        return obj


def _type_name(v) -> str:
    return str(getattr(type(v), "__qualname__", "object"))[:100]


def lent_object(entry):
    """What a lent number stands for now (None: an array of the submission's that died)."""
    return entry() if isinstance(entry, weakref.ref) else entry


async def _awaited(x):
    return await x
