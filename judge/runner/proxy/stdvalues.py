"""Values of the standard library that are plain data, and builtin or standard-library classes,
crossing by value: a `Fraction`, `Decimal`, `datetime`, `date`, `time` or `timedelta` the
submission returns is one here, so `==` and `<` against the test's own are settled here, by
Python, not by asking the submission. A class such as `ConnectionError` or
`dataclasses.FrozenInstanceError` crosses as the class itself (so `except exc:` and
`raises(...)` catch it); only classes of a few modules of plain data, looked up by name among
modules already imported, never imported on request."""

from __future__ import annotations

import builtins
import datetime as dt
import decimal
import fractions
import pathlib
import sys

from .wire import WireError

MAX_TEXT = 200
MAX_PATH = 4096
# the modules whose classes cross as themselves: none of them reaches the system
_CLASS_MODULES = frozenset({"builtins", "fractions", "decimal", "datetime", "collections",
                            "dataclasses", "numbers"})
_FIXED_TZ = (type(None), dt.timezone)
# a path crosses as its text (a handle to one would walk the trusted side's files and, through
# `iterdir()`, reach a generator's frame); pure or concrete kept, POSIX only
_PATHS = (pathlib.PosixPath, pathlib.PurePosixPath)


def encode_std(v, t: type):
    """The tagged value of `v`, or None when it is not one of these."""
    if v is NotImplemented or v is Ellipsis:  # `a.__add__(1)` is NotImplemented here too
        return {"K": "NotImplemented" if v is NotImplemented else "Ellipsis"}
    if t is fractions.Fraction:
        return {"Q": [v.numerator, v.denominator]}
    if t is decimal.Decimal:
        return {"DEC": str(v)}
    if t is dt.timedelta:
        return {"TD": [v.days, v.seconds, v.microseconds]}
    if t is dt.date:
        return {"DA": v.isoformat()}
    if t is dt.datetime or t is dt.time:
        if type(v.tzinfo) not in _FIXED_TZ:  # a zone with rules is an object of its own
            return None
        return {"DT" if t is dt.datetime else "TM": v.isoformat()}
    if t is range:  # plain data: its bounds (len, `in`, indexing are Python's, here)
        return {"RG": [v.start, v.stop, v.step]}
    if t is slice:
        parts = [v.start, v.stop, v.step]
        if all(x is None or type(x) is int for x in parts):
            return {"SL": parts}
        return None
    if t in _PATHS:  # a path is its text: what it names is read where it is used
        return {"PA": [_PATHS.index(t), str(v)]}
    if t.__module__ == "torch" and t.__name__ in ("device", "dtype"):  # m.to(device)
        return {"TDV" if t.__name__ == "device" else "TDT": str(v)}
    if isinstance(v, type):
        return _encode_class(v)
    return None


def _encode_class(cls: type):
    module, name = getattr(cls, "__module__", None), getattr(cls, "__qualname__", None)
    if module not in _CLASS_MODULES or not isinstance(name, str):
        return None
    if _lookup(module, name) is not cls:
        return None
    return {"Y": [module, name]}


def _lookup(module: str, name: str):
    mod = builtins if module == "builtins" else sys.modules.get(module)
    obj: object = mod
    for part in name.split("."):
        if not part.isidentifier() or part.startswith("_") or obj is None:
            return None
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) else None


STD_TAGS = ("K", "Q", "DEC", "TD", "DA", "DT", "TM", "Y", "SL", "RG", "TDV", "TDT", "PA")


def decode_std(v: dict):
    try:
        if "K" in v:
            if v["K"] not in ("NotImplemented", "Ellipsis"):
                raise WireError("a singleton of no known name")
            return NotImplemented if v["K"] == "NotImplemented" else Ellipsis
        if "Q" in v:
            n, d = v["Q"]
            if type(n) is not int or type(d) is not int or d <= 0:
                raise WireError("a malformed fraction")
            return fractions.Fraction(n, d)
        if "TD" in v:
            days, secs, us = v["TD"]
            if not all(type(x) is int for x in (days, secs, us)):
                raise WireError("a malformed timedelta")
            return dt.timedelta(days=days, seconds=secs, microseconds=us)
        if "RG" in v:
            start, stop, step = v["RG"]
            if not all(type(x) is int for x in (start, stop, step)) or step == 0:
                raise WireError("a malformed range")
            return range(start, stop, step)
        if "SL" in v:
            start, stop, step = v["SL"]
            if not all(x is None or type(x) is int for x in (start, stop, step)):
                raise WireError("a malformed slice")
            return slice(start, stop, step)
        if "PA" in v:
            which, text = v["PA"]
            if type(which) is not int or not 0 <= which < len(_PATHS) or \
                    not isinstance(text, str) or len(text) > MAX_PATH or "\0" in text:
                raise WireError("a malformed path")
            return _PATHS[which](text)
        if "TDV" in v or "TDT" in v:
            return _torch_value(v)
        if "Y" in v:
            module, name = v["Y"]
            cls = _lookup(str(module), str(name)) if module in _CLASS_MODULES else None
            if cls is None:
                raise WireError("a class this side does not hand over by name")
            return cls
        tag = next(k for k in ("DEC", "DA", "DT", "TM") if k in v)
        text = v[tag]
        if not isinstance(text, str) or len(text) > MAX_TEXT:
            raise WireError("a malformed date or decimal")
        if tag == "DEC":
            return decimal.Decimal(text)
        if tag == "DA":
            return dt.date.fromisoformat(text)
        return (dt.datetime if tag == "DT" else dt.time).fromisoformat(text)
    except WireError:
        raise
    except (TypeError, ValueError, ArithmeticError, OverflowError, RuntimeError):
        raise WireError("a malformed standard-library value") from None


def _torch_value(v: dict):
    text = v.get("TDV", v.get("TDT"))
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise WireError("a malformed torch device or dtype")
    import torch
    if "TDV" in v:
        return torch.device(text)
    dtype = getattr(torch, text[6:], None) if text.startswith("torch.") else None
    if not isinstance(dtype, torch.dtype):
        raise WireError("a torch dtype of no known name")
    return dtype
