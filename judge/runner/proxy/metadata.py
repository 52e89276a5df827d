"""The metadata dunders of a stand-in (`f.__name__`, `__qualname__`, `__doc__`, `__module__`,
`__wrapped__`, `__annotations__`, `inspect.signature(f)`), as one process has them.

Asymmetric on purpose. The trusted side may read them of the submission's objects: that side
is untrusted anyway, and what it answers is a value the test then judges (`check(g.__name__,
"g")`). The submission side never asks the trusted side for a dunder (the guard refuses `_`
names before asking, operations.py); what it knows of a function or class the tests handed it
is what the handle itself carries: its name, qualified name and docstring (codec `_handle`),
which `functools.wraps` copies onto a wrapper of it, as in one process.

A stand-in has `__slots__` and no instance dict, so `__doc__` and `__module__` (class
attributes of every class) are answered by a data descriptor in the class that is also a `str`:
read on the class it is the class's own text (`type(r).__module__.startswith(...)` still
works), read on an instance it is the instance's."""

from __future__ import annotations

import inspect

from .wire import WireError

# dunders of the submission's objects the trusted side reads through a request
READABLE = frozenset({"__name__", "__qualname__", "__wrapped__", "__annotations__",
                      "__defaults__", "__kwdefaults__", "__module__", "__doc__"})
MAX_PARAMS = 256
_KINDS = {int(k): k for k in (inspect.Parameter.POSITIONAL_ONLY,
                              inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.KEYWORD_ONLY,
                              inspect.Parameter.VAR_KEYWORD)}


def dunder(r, name: str):
    """`r.<name>` for a dunder `__getattr__` was asked (not found on the stand-in's class)."""
    ep = r._ep
    if ep.guarded:
        if name == "__signature__":
            return signature_from(ep.request("signature", r._hid))
        if name in READABLE:
            return ep.request("getattr", r._hid, name)
        raise AttributeError(name)
    meta = ep.meta.get(r._hid)
    if meta is not None and name == "__name__":
        return r._name
    if meta is not None and name == "__qualname__":
        return meta[0]
    raise AttributeError(name)


class _PerInstance(str):
    """A class attribute `__doc__` / `__module__` that, read on an instance, is that instance's:
    a data descriptor (it has `__set__`), so it is asked before the class's own text."""

    attr: str

    def __new__(cls, text, attr: str):
        out = super().__new__(cls, text or "")
        out.attr = attr
        return out

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        ep = obj._ep
        if ep.guarded:
            return ep.request("getattr", obj._hid, self.attr)
        meta = ep.meta.get(obj._hid)
        if self.attr == "__doc__":
            return meta[1] if meta is not None else None
        raise AttributeError(self.attr)  # the tests' module is not the submission's to know

    def __set__(self, obj, value):
        obj._ep.request("setattr", obj._hid, self.attr, value)


def install(*classes) -> None:
    for cls in classes:
        cls.__module__ = _PerInstance(cls.__dict__.get("__module__"), "__module__")
        cls.__doc__ = _PerInstance(cls.__dict__.get("__doc__"), "__doc__")


# ---- inspect.signature across ---------------------------------------------------------------

def signature_of(target) -> list:
    """The submission side: a callable's parameters as [name, kind, has default, default]."""
    sig = inspect.signature(target)
    out = []
    for p in list(sig.parameters.values())[:MAX_PARAMS]:
        has = p.default is not inspect.Parameter.empty
        out.append([p.name, int(p.kind), has, p.default if has else None])
    return out


def signature_from(data) -> inspect.Signature:
    """The trusted side: an `inspect.Signature` built from the names and kinds (annotations do
    not cross); a malformed answer is the submission's protocol error."""
    if not isinstance(data, list) or len(data) > MAX_PARAMS:
        raise WireError("a malformed signature")
    params = []
    for item in data:
        if not (isinstance(item, list) and len(item) == 4 and isinstance(item[0], str)
                and type(item[1]) is int and item[1] in _KINDS and type(item[2]) is bool):
            raise WireError("a malformed signature")
        kw = {"default": item[3]} if item[2] else {}
        try:
            params.append(inspect.Parameter(item[0], _KINDS[item[1]], **kw))
        except (TypeError, ValueError):
            raise WireError("a malformed signature") from None
    try:
        return inspect.Signature(params)
    except (TypeError, ValueError):
        raise WireError("a malformed signature") from None
