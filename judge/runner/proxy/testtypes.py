"""The tests' own classes as real types on the submission's side (docs/IMPORTED_GRADING.md, "The
tests' classes"), the counterpart of peertypes.py: a student who tags a test's dataclass
instances with `type(obj).__name__` gets the class's name, not 'Remote'.

The trusted side tells, with the first handle of each class of the tests' own modules (the
suite's files, the handbook and served modules: capabilities.Guard.own_module), an account of
it: its module name, its bases among such classes, whether its instances are callable and
hashable, its dataclass fields (name, annotation, flags, default) and `__match_args__`; and,
with the first handle of each instance of such a class, which class that is. The submission
side makes one stand-in type per class (metaclass peertypes.RemoteClass: calling it constructs
the test's class over there, its attributes are read there), with the class's `__name__`,
`__qualname__`, `__module__` and docstring, and `__dataclass_fields__` rebuilt from the
fields, and makes each instance's stand-in an instance of it. So `type(x).__name__`,
`__qualname__`, `__module__`, `isinstance(x, Cls)` against the class the test passed,
`dataclasses.fields`, `is_dataclass`, `asdict` and `replace` (which calls `obj.__class__`:
the test's class, over there) and `match x: case Point(x=0)` see what the test wrote.

An account is strings and values that cross as any value (an annotation or a default the
guard refuses crosses as its text, or not at all): nothing the submission could not read of
the class in one process, and no new handle, op or kind. A student's class statement that
subclasses a test's class is a TypeError here (the trusted side makes no class on request)."""

from __future__ import annotations

import dataclasses
import types

from . import codec as C
from .peertypes import RemoteClass, _defines, stand_in_bases, typed_class
from .wire import WireError

MAX_BASES = 16
MAX_FIELDS = 500
MAX_NAME = 200


def typed(codec, cls) -> bool:
    """A class of the tests' own modules that crosses as a type (the trusted side)."""
    return isinstance(cls, type) and typed_class(cls) and \
        codec.guard.own_module(cls.__dict__.get("__module__"))


def tell(codec, v, out: dict) -> None:
    """The trusted side's `_handle`: a class's account with its first handle, the class of an
    instance with the instance's first handle of that class (and, for a served module's
    objects, the names of their methods: `t.syncthreads()` is one request)."""
    if isinstance(v, type):
        if typed(codec, v) and out["R"] not in codec.classes_told:
            codec.classes_told.add(out["R"])
            out["t"] = account(codec, v)
        return
    cls = type(v)
    served = cls.__module__ in getattr(codec, "served", ())
    if isinstance(v, (types.FunctionType, types.ModuleType)) or \
            not (served or typed(codec, cls)):
        return
    tid = codec.type_ids.get(cls)
    if tid is None and len(codec.type_ids) < C.MAX_TYPES:
        tid = codec.type_ids[cls] = len(codec.type_ids) + 1
        out["ym"] = C._methods(cls) if served else []
        if typed(codec, cls):
            out["yc"] = codec.encode(cls)
    if tid is not None:
        out["y"] = tid


def account(codec, cls: type) -> dict:
    info: dict = {"m": str(cls.__dict__.get("__module__", ""))[:MAX_NAME],
                  "b": [codec.encode(b) for b in cls.__bases__[:MAX_BASES] if typed(codec, b)],
                  "c": _defines(cls, "__call__"), "h": getattr(cls, "__hash__", None) is not None}
    if dataclasses.is_dataclass(cls):
        info["df"] = [_field(codec, f) for f in dataclasses.fields(cls)[:MAX_FIELDS]]
    match_args = getattr(cls, "__match_args__", None)
    if isinstance(match_args, tuple) and all(type(n) is str for n in match_args):
        info["ma"] = list(match_args[:MAX_FIELDS])
    return info


def _field(codec, f: dataclasses.Field) -> dict:
    out = {"n": f.name, "t": _value(codec, f.type, text=True),
           "f": [bool(f.init), bool(f.repr), bool(f.compare), f.kw_only is True],
           "h": f.hash if isinstance(f.hash, bool) else None}
    for key, value in (("d", f.default), ("fa", f.default_factory)):
        if value is not dataclasses.MISSING:
            encoded = _value(codec, value)
            if encoded is not None:
                out[key] = encoded
    return out


def _value(codec, value, text: bool = False):
    """`value` as it crosses; what the guard refuses: its text (an annotation) or None."""
    if isinstance(value, str):
        return value
    try:
        return codec.encode(value)
    except (TypeError, ValueError):  # ProxyRefused is a TypeError
        return repr(value)[:MAX_NAME] if text else None


# ---- the submission side --------------------------------------------------------------------

def make(codec, hid: int, v: dict) -> type:
    """The stand-in type of the tests' class `hid` from its account (`v["t"]`)."""
    info = v.get("t")
    if not isinstance(info, dict) or not isinstance(info.get("b", []), list) or \
            len(info.get("b", [])) > MAX_BASES:
        raise WireError("a malformed class of the tests")
    bases = stand_in_bases(codec, info.get("b", []), info.get("c") is True)
    name = _text(v.get("n"), "Object")
    ns: dict = {"__slots__": (), "__qualname__": _text(v.get("q"), name),
                "__module__": _text(info.get("m"), "tests"), "__doc__": _doc(v.get("d")),
                "_rc_ep": codec, "_rc_hid": hid}
    if info.get("h") is False:
        ns["__hash__"] = None
    if "df" in info:
        ns["__dataclass_fields__"] = _fields(codec, info["df"])
    if "ma" in info:
        ma = info["ma"]
        if not isinstance(ma, list) or not all(type(n) is str for n in ma):
            raise WireError("a malformed class of the tests")
        ns["__match_args__"] = tuple(ma)
    try:
        return RemoteClass(name if name.isidentifier() else "Object", tuple(bases), ns)
    except TypeError:  # bases in an order no MRO can have: the class alone
        return RemoteClass(name if name.isidentifier() else "Object", (bases[-1],), ns)


def _text(x, default: str) -> str:
    return x[:MAX_NAME] if isinstance(x, str) and x else default


def _doc(x):
    return x if isinstance(x, str) else None


def _fields(codec, raw) -> dict:
    if not isinstance(raw, list) or len(raw) > MAX_FIELDS:
        raise WireError("malformed dataclass fields")
    out: dict = {}
    for item in raw:
        flags = item.get("f") if isinstance(item, dict) else None
        name = item.get("n") if isinstance(item, dict) else None
        if not (isinstance(name, str) and name.isidentifier() and isinstance(flags, list)
                and len(flags) == 4 and all(type(x) is bool for x in flags)):
            raise WireError("malformed dataclass fields")
        kw: dict = {"init": flags[0], "repr": flags[1], "compare": flags[2], "kw_only": flags[3],
                    "hash": item.get("h") if type(item.get("h")) is bool else None}
        if "d" in item:
            kw["default"] = codec.decode(item["d"])
        elif "fa" in item:
            kw["default_factory"] = codec.decode(item["fa"])
        f = dataclasses.field(**kw)
        f.name, f.type = name, codec.decode(item["t"]) if "t" in item else None
        f._field_type = dataclasses._FIELD  # type: ignore[attr-defined]  # what `fields` lists
        out[name] = f
    return out
