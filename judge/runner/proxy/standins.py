"""The peer's handles decoded into stand-ins (remote.py, peertypes.py): one per object while
it is in use, under the caps. Methods of `Codec` (codec.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import codec as C
from . import snapshots
from .peertypes import RemoteClass, make_class
from .remote import Remote, enum_value, held
from .testtypes import make as make_test_class
from .wire import WireError

if TYPE_CHECKING:
    from .codec import Codec


def hid(codec: Codec, v) -> int:
    hid = v.get("R", v.get("r"))
    if not isinstance(hid, int) or isinstance(hid, bool) or hid <= 0:
        raise WireError("a malformed handle")
    return hid


def count(codec: Codec) -> None:
    codec.made += 1
    if codec.made > C.MAX_HANDLES:
        raise WireError("too many handles")


def held_value(codec: Codec, value, v):
    codec._count()
    return held(codec, codec._hid(v), value)


def remote(codec: Codec, v):
    hid = codec._hid(v)
    if "x" in v:
        return codec._mirror(hid, v)
    if "e" in v:
        m = codec.members.get(hid)
        if m is None:
            if type(v["e"]) not in C._PLAIN or type(v["e"]) is bool:
                raise WireError("an enum member of a malformed value")
            codec._count()
            m = codec.members[hid] = enum_value(codec, hid, v["e"], str(v.get("n"))[:100])
        return m
    if hid in codec.peer_classes:
        return codec.peer_classes[hid]
    if "t" in v and len(codec.peer_classes) < C.MAX_TYPES:
        # the peer's class as a local type (past the cap, a handle)
        if codec.guarded:
            return codec._peer_class(hid, v)
        codec._count()
        cls = codec.peer_classes[hid] = make_test_class(codec, hid, v)
        return cls
    r = codec.remotes.get(hid)
    if r is None:
        codec._count()
        kinds = v.get("k") if isinstance(v.get("k"), str) else ""
        name = v.get("n") if isinstance(v.get("n"), str) else "object"
        methods = codec._peer_methods(v)
        typ = codec.peer_type_class.get(v["y"]) if "y" in v else None
        r = Remote._make(codec, hid, kinds[:4], name[:100], methods, typ)
        codec.remotes[hid] = r
        if "q" in v and not codec.guarded and isinstance(v["q"], str) and \
                len(codec.meta) < C.MAX_HANDLES:
            doc = v.get("d")
            codec.meta[hid] = (v["q"][:200], doc[:C.MAX_TEXT] if isinstance(doc, str) else None)
    if not codec.guarded:  # each crossing's own, or none: an older one is of an older epoch
        object.__setattr__(r, "_snap", (codec.epoch(), snapshots.decode(v["v"]))
                           if "v" in v else None)
    if "o" in r._kinds:  # a real coroutine here too: create_task and asyncio.run take it
        return C._awaited(r)
    if "g" in r._kinds and codec.guarded:
        # a generator function of the submission's: a real one here (served.gen_stub)
        stub = codec.gen_stubs.get(hid)
        if stub is None:
            from .served import gen_stub  # served.py builds on codec.py
            stub = codec.gen_stubs[hid] = gen_stub(r)
        return stub
    return r


def peer_methods(codec: Codec, v) -> frozenset:
    tid = v.get("y")
    if tid is None:
        return frozenset()
    if not isinstance(tid, int) or isinstance(tid, bool):
        raise WireError("a malformed class number")
    names = v.get("ym")
    if names is not None:
        if not isinstance(names, list) or len(names) > C.MAX_METHODS or \
                len(codec.peer_types) >= C.MAX_TYPES or \
                not all(isinstance(n, str) and n.isidentifier() and not n.startswith("_")
                        for n in names):
            raise WireError("a malformed list of methods")
        codec.peer_types[tid] = frozenset(names)
        if "yc" in v:
            cls = codec.decode(v["yc"])
            if type(cls) is RemoteClass and cls.__dict__.get("_rc_ep") is codec:
                codec.peer_type_class[tid] = cls
    return codec.peer_types.get(tid, frozenset())


def peer_class(codec: Codec, hid: int, v: dict) -> type:
    codec._count()
    name = v.get("n")
    name = name[:100] if isinstance(name, str) else "Object"
    cls = codec.peer_classes[hid] = make_class(codec, hid, name, v.get("t"))
    return cls
