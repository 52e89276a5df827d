"""A test's object's plain attributes sent with its handle (docs/IMPORTED_GRADING.md, "Plain
attributes with the handle"), so that reading them costs the submission no request.

A gpusim-like kernel reads `t.block_idx`, `t.block_dim`, `t.thread_idx` of the thread object
the served simulator passes it, once per simulated thread: three requests of a kernel's six.
One process would give each read the attribute's value at that moment. The trusted side runs
the tests' code only while it serves a message of the submission's (its one thread is blocked
in the call it made, or waiting for the nested request's next message), so until the
submission's process sends anything the tests' object cannot change: the values read then are
the values one process gives. The submission side uses a snapshot only while its endpoint has
sent nothing since the snapshot arrived (`Endpoint.epoch`), and asks otherwise.

The trusted side sends one only when that reasoning holds: on its main thread with no other
thread alive (a test's thread could change the object meanwhile), for a request's arguments or
an answer given while its main thread waits on a call of its own (an answer given from the
event loop's reader lets the loop run the tests' coroutines next), and only for attributes
`getattr` would read from the instance's `__dict__`: public names that no class of the
object's type defines (no property, no descriptor, no class attribute), of an object whose type
keeps object's own `__getattribute__`, valued None, a bool, an int, a float or a short str.
They are the values a `getattr` request for those public names would answer: nothing the
capability guard does not already give for a handle of that kind."""

from __future__ import annotations

import threading

from ..own_threads import others_alive
from .wire import WireError

MAX_ATTRS = 16
MAX_STR = 200
_INT_LIMIT = 1 << 63
_VALUES = (type(None), bool, int, float, str)


def plain_attributes(v) -> list | None:
    """[[name, value], ...] of `v`'s plain instance attributes, as `getattr` reads them."""
    cls = type(v)
    if cls.__getattribute__ is not object.__getattribute__ or isinstance(v, BaseException):
        return None
    try:
        own = vars(v)
    except TypeError:
        return None
    if not own or len(own) > MAX_ATTRS:
        return None
    mro = [vars(k) for k in cls.__mro__]
    out = []
    for name, value in own.items():
        t = type(value)
        if type(name) is not str or name.startswith("_") or t not in _VALUES or \
                (t is int and not -_INT_LIMIT < value < _INT_LIMIT) or \
                (t is str and len(value) > MAX_STR) or any(name in d for d in mro):
            continue
        out.append([name, value])
    return out or None


def may_send(ep) -> bool:
    """Whether the tests' code stays still until the submission's next message (above): on
    the main thread, with no thread alive but the runner's own watchdogs (own_threads.py)."""
    return threading.get_ident() == ep.main_thread and \
        (threading.active_count() == 1 or others_alive() == 0)


def decode(raw) -> dict:
    """The submission side: a snapshot as the trusted side sent it, checked."""
    if not isinstance(raw, list) or len(raw) > MAX_ATTRS:
        raise WireError("a malformed snapshot of attributes")
    out = {}
    for item in raw:
        if not (isinstance(item, list) and len(item) == 2 and type(item[0]) is str
                and item[0].isidentifier() and not item[0].startswith("_")
                and type(item[1]) in _VALUES):
            raise WireError("a malformed snapshot of attributes")
        out[item[0]] = item[1]
    return out
