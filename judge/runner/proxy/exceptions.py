"""Exceptions to and from the wire: by type and message, groups with their members; the peer's
exception classes as real local ones (`mirror`), so `except` and `raises` work on them.
Methods of `Codec` (codec.py)."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from . import codec as C
from .wire import WireError

if TYPE_CHECKING:
    from .codec import Codec

MAX_GROUP_DEPTH = 16     # exception groups inside groups
MAX_GROUP_ITEMS = 1000   # members of one group


def builtin_base(cls: type) -> type:
    k: type
    for k in cls.__mro__:
        if getattr(builtins, k.__name__, None) is k:
            return k
    return Exception


def mirror(codec: Codec, hid: int, v: dict) -> type:
    """A real local exception class for one of the peer's: `except`, `raises` and
    isinstance work on it (the peer's class hierarchy above the builtin base is flattened)."""
    cls = codec.mirrors.get(hid)
    if cls is None:
        base = getattr(builtins, str(v.get("x")), None)
        if not (isinstance(base, type) and issubclass(base, Exception)):
            base = Exception
        name = str(v.get("n") or "Error")[:100]
        cls = type(name if name.isidentifier() else "Error", (base,), {})
        codec.mirrors[hid] = cls
        codec._mirror_of[cls] = hid
    return cls


def encode_exc(codec: Codec, e: BaseException, depth: int = 0) -> dict:
    cls = type(e)
    base = builtin_base(cls)
    group = e if isinstance(e, BaseExceptionGroup) and depth < MAX_GROUP_DEPTH else None
    try:
        text = str(e if group is None else group.message)  # str() appends the count
    except Exception:
        text = f"<{cls.__name__}>"
    out: dict[str, object] = {"n": cls.__name__[:100], "b": base.__name__,
                              "m": text[:C.MAX_TEXT]}
    if group is not None:  # `except*` and `eg.exceptions` on the other side: members too
        out["g"] = [codec.encode_exc(x, depth + 1)
                    for x in group.exceptions[:MAX_GROUP_ITEMS]]
    if base is not cls and cls not in codec._mirror_of:
        out["c"] = codec.encode(cls)
    elif cls in codec._mirror_of:
        out["c"] = {"H": codec._mirror_of[cls]}
    return out


def decode_exc(codec: Codec, d, depth: int = 0) -> BaseException:
    if not isinstance(d, dict):
        raise WireError("a malformed exception")
    msg = str(d.get("m", ""))[:C.MAX_TEXT]
    subs = None
    if "g" in d:
        if not isinstance(d["g"], list) or len(d["g"]) > MAX_GROUP_ITEMS or \
                depth >= MAX_GROUP_DEPTH:
            raise WireError("a malformed exception group")
        subs = [codec.decode_exc(x, depth + 1) for x in d["g"]]
    cls = None
    if "c" in d:
        c = codec.decode(d["c"])
        if isinstance(c, type) and issubclass(c, Exception):
            cls = c
    if cls is None:
        b = getattr(builtins, str(d.get("b")), None)
        cls = b if isinstance(b, type) and issubclass(b, Exception) else None
    if cls is None:  # SystemExit, KeyboardInterrupt...: never re-raised as themselves
        return RuntimeError(f"{d.get('n', 'BaseException')}: {msg}")
    try:
        if subs is not None and issubclass(cls, BaseExceptionGroup):
            return cls(msg, subs)
        return cls(msg)
    except Exception:
        return RuntimeError(f"{d.get('n')}: {msg}")
