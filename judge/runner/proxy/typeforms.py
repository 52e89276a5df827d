"""Type annotations crossing by value (docs/IMPORTED_GRADING.md): `list[int]`, `int | None`,
`Optional[...]`, `Union[...]`, `Literal[...]`, `Any`, `typing.List[...]`-style aliases,
`NoneType` and the tests' own `TypedDict` classes, so a submission that inspects a type it is
handed (`typing.get_origin`, `get_args`, `typing.is_typeddict(tp)`, `get_type_hints(tp)`,
`isinstance(tp, type)`) sees, in its own process, the same structure the test wrote
(py-validate-typed).

A `TypedDict` of the tests is a schema: its name, its keys and their annotations, which of them
are required: what one process would let the student's code read of it, and nothing more (no
module, no function, no attribute of the test's). It is rebuilt over there as a TypedDict of
its own, one per class of the tests (numbered as a handle, so it crosses back as the test's
class itself). A `Literal`'s values cross as any value does; an annotation this does not know
(a `TypeVar`, a `Callable[...]`, a class of the tests' that is not a TypedDict) stays a
handle, as before.
"""

from __future__ import annotations

import types
import typing

from .wire import WireError

# typing's aliases of builtin generics that a test may write subscripted (`typing.List[int]`)
_ALIASES = frozenset({"List", "Dict", "Set", "FrozenSet", "Tuple", "Type", "DefaultDict",
                      "OrderedDict", "Counter", "Deque", "ChainMap", "Iterable", "Iterator",
                      "Sequence", "MutableSequence", "Mapping", "MutableMapping",
                      "AbstractSet", "MutableSet", "Collection", "Container", "Generator",
                      "AsyncIterator", "AsyncIterable", "Awaitable", "Coroutine",
                      "Reversible", "Sized", "Hashable"})
MAX_KEYS = 1000
_NONE = type(None)
_UNITES = (type, types.GenericAlias, types.UnionType)


def encode_form(codec, v, depth: int):
    """The tagged form of an annotation, or None when `v` is not one this module knows."""
    t = type(v)
    enc = codec.encode
    if isinstance(v, type) and v in codec.typeddict_of:
        return {"H": codec.typeddict_of[v]}  # the peer's own TypedDict, rebuilt here
    if v is typing.Any:
        return {"TF": ["Any"]}
    if v is _NONE:
        return {"TF": ["None"]}
    if t is types.GenericAlias:
        origin = enc(v.__origin__, depth + 1)
        if not isinstance(origin, dict) or "R" in origin:
            return None  # a generic of a class that crosses as a handle stays one
        return {"TF": ["GA", origin, [enc(a, depth + 1) for a in v.__args__]]}
    if t is types.UnionType:
        return {"TF": ["|", [enc(a, depth + 1) for a in v.__args__]]}
    origin = typing.get_origin(v) if t.__module__ == "typing" else None
    if origin is typing.Union:
        return {"TF": ["Union", [enc(a, depth + 1) for a in typing.get_args(v)]]}
    if origin is typing.Literal:
        return {"TF": ["Literal", [enc(a, depth + 1) for a in typing.get_args(v)]]}
    if origin is not None and getattr(v, "_name", None) in _ALIASES:
        return {"TF": ["T", v._name, [enc(a, depth + 1) for a in typing.get_args(v)]]}
    if isinstance(v, type) and typing.is_typeddict(v):
        return _encode_typeddict(codec, v, depth)
    return None


def _encode_typeddict(codec, cls: type, depth: int) -> dict:
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001  a forward reference the test never defined
        hints = dict(getattr(cls, "__annotations__", {}))
    required = getattr(cls, "__required_keys__", frozenset(hints))
    keys = [[k, codec.encode(tp, depth + 1), k in required]
            for k, tp in list(hints.items())[:MAX_KEYS] if isinstance(k, str)]
    return {"TF": ["TD", codec.export(cls), str(cls.__name__)[:100], keys,
                   str(getattr(cls, "__module__", ""))[:100]]}


def decode_form(codec, v: dict):
    form = v["TF"]
    if not isinstance(form, list) or not form or not isinstance(form[0], str):
        raise WireError("a malformed annotation")
    kind, rest = form[0], form[1:]
    dec = codec.decode
    try:
        if kind == "Any":
            return typing.Any
        if kind == "None":
            return _NONE
        if kind == "GA":
            origin, args = dec(rest[0]), _args(codec, rest[1])
            if not isinstance(origin, type):
                raise WireError("a generic of no class")
            return types.GenericAlias(origin, args)
        if kind == "|":
            args = _args(codec, rest[0])
            if not args or not all(isinstance(a, _UNITES) for a in args):
                return typing.Union[args]  # (a handle among them: never `|` by request)
            out = args[0]
            for a in args[1:]:
                out = out | a
            return out
        if kind == "Union":
            return typing.Union[_args(codec, rest[0])]
        if kind == "Literal":
            return typing.Literal[_args(codec, rest[0])]
        if kind == "T":
            if rest[0] not in _ALIASES:
                raise WireError("a typing alias of no known name")
            return getattr(typing, rest[0])[_args(codec, rest[1])]
        if kind == "TD":
            return _typeddict(codec, rest)
    except WireError:
        raise
    except (TypeError, ValueError, IndexError, AttributeError):
        raise WireError("a malformed annotation") from None
    raise WireError("an annotation of no known kind")


def _args(codec, raw) -> tuple:
    if not isinstance(raw, list):
        raise WireError("a malformed annotation")
    return tuple(codec.decode(a) for a in raw)


def _typeddict(codec, rest: list):
    hid, name, keys, module = rest
    if type(hid) is not int or not isinstance(name, str) or not isinstance(keys, list) or \
            len(keys) > MAX_KEYS:
        raise WireError("a malformed TypedDict")
    known = codec.typeddicts.get(hid)
    if known is not None:
        return known
    fields = {}
    for item in keys:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                and type(item[2]) is bool):
            raise WireError("a malformed TypedDict")
        tp = codec.decode(item[1])
        fields[item[0]] = tp if item[2] else typing.NotRequired[tp]
    make: typing.Any = typing.TypedDict  # (called with a name known only now)
    cls = make(name if name.isidentifier() else "TypedDict", fields)
    if isinstance(module, str):
        cls.__module__ = module
    codec.typeddicts[hid] = cls
    codec.typeddict_of[cls] = hid
    return cls
