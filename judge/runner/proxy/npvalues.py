"""numpy's own small values crossing by value, as one process would have them: a numpy scalar
(`np.float32(1.5)`, `np.bool_(True)`, the `np.float64` a `.sum()` returns) stays a numpy
scalar of its dtype (it has `.shape`, `.dtype`, float32 rounding), a scalar type (`np.int32`,
the class) is that class here, and a `np.dtype` is one. Only numeric kinds, as arrays
(wire.py): an object dtype would carry objects. Types are looked up among numpy's own scalar
types by their type code or by name, never imported on request: numpy is asked only when it
is imported here already or when a value of it arrives (decode_array imports it the same way)."""

from __future__ import annotations

import sys

from .wire import WireError, attached, attachment

_KINDS = frozenset("biufc")  # as wire._NUMPY_KINDS
MAX_TEXT = 40
# numpy's abstract scalar classes, for `isinstance(x, np.floating)` and `np.issubdtype`
_ABSTRACT = ("generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact",
             "floating", "complexfloating")
NP_TAGS = ("NS", "NT", "ND")


def _numpy():
    return sys.modules.get("numpy")


def encode_np(v, t: type):
    """The tagged value of `v`, or None when it is none of these (or numpy is not loaded)."""
    np = _numpy()
    if np is None:
        return None
    if isinstance(v, np.generic):
        dtype = v.dtype
        if dtype.kind not in _KINDS or t is not dtype.type:
            return None  # a subclass of the student's, a string or datetime: not plain data
        return {"NS": [dtype.str, attachment(v.tobytes())]}
    if t is np.dtype or isinstance(v, np.dtype):
        if v.kind not in _KINDS or v.fields is not None or v.subdtype is not None:
            return None
        return {"ND": v.str}
    if isinstance(v, type) and issubclass(v, np.generic):
        name = str(getattr(v, "__name__", ""))
        if name in _ABSTRACT and getattr(np, name, None) is v:
            return {"NT": name}
        try:
            dtype = np.dtype(v)
        except TypeError:
            return None
        if dtype.kind not in _KINDS or dtype.type is not v or np.dtype(dtype.char).type is not v:
            return None
        return {"NT": dtype.char}  # one code a class: np.longlong is not np.int64's
    return None


def _dtype(np, text):
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise WireError("a malformed numpy dtype")
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError):
        raise WireError("a numpy dtype of no known name") from None
    if dtype.kind not in _KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise WireError(f"a numpy dtype {dtype} that does not cross")
    return dtype


def decode_np(v: dict):
    import numpy as np

    if "ND" in v:
        return _dtype(np, v["ND"])
    if "NT" in v:
        name = v["NT"]
        if name in _ABSTRACT:
            return getattr(np, name)
        if not isinstance(name, str) or len(name) != 1:
            raise WireError("a numpy scalar type of no known name")
        return _dtype(np, name).type
    pair = v["NS"]
    if not isinstance(pair, list) or len(pair) != 2:
        raise WireError("a malformed numpy scalar")
    dtype = _dtype(np, pair[0])
    data = attached(pair[1])
    if len(data) != dtype.itemsize:
        raise WireError("a numpy scalar whose bytes do not match its dtype")
    return np.frombuffer(data, dtype=dtype)[0]
