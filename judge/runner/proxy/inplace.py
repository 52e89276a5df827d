"""In-place changes to what was passed to a call, copied back into the caller's own objects, as
in one process: a list, dict, set or bytearray, and a numpy array or torch tensor, passed as an
argument or found inside one (a list of arrays, a dict of lists), changed by the callee, is
changed in the caller once the call returns.

Both sides walk an argument's mutable containers in the same order (the order of its
encoding), so a container is named by its number there. The callee snapshots each before the
call and, after it, sends the new contents of those it changed; a container held in a changed
one that is itself one of the argument's (by identity) travels as its number, so the caller's
nested objects, and every alias of them the caller holds, are the ones changed. A reference
only ever points to a container numbered later (a child in the walk), so what comes back can
make no cycle. What comes back is decoded as any value (caps, depth) and checked against the
caller's own containers (kind, shape): a peer that breaks this is `WireError`.

Limits: two aliases of one container in one call's arguments cross as two copies (a change to
each is copied back, the last wins); a dict's keys are not walked (they are hashable)."""

from __future__ import annotations

import operator

from .wire import WireError, is_ndarray, is_tensor

_SCALARS = (int, float, str, bool, type(None))


def containers(v, skip=None) -> list:
    """The mutable containers of one argument, in walk order. `skip`: ids of this side's own
    objects the peer named by handle (they are not part of the value that crossed)."""
    out: list = []
    _walk(v, out, skip)
    return out


def _walk(v, out: list, skip) -> None:
    t = type(v)
    if skip and id(v) in skip:
        return
    if t is list or t is tuple:
        if t is list:
            out.append(v)
        if not all(type(x) in _SCALARS for x in v):
            for x in v:
                _walk(x, out, skip)
    elif t is dict:
        out.append(v)
        for x in v.values():
            if type(x) not in _SCALARS:
                _walk(x, out, skip)
    elif t is set or t is bytearray or is_ndarray(v) or is_tensor(v):
        out.append(v)


def snapshot(c):
    t = type(c)
    if t is list:
        return list(c)
    if t is dict:
        return list(c.items())
    if t is set:
        return set(c)
    if t is bytearray:
        return bytes(c)
    if is_tensor(c):
        before = c.detach().clone()
        return before.requires_grad_(True) if c.requires_grad else before
    return c.copy()


def changed(c, before) -> bool:
    t = type(c)
    if t is list:
        return len(c) != len(before) or not all(map(operator.is_, c, before))
    if t is dict:
        return len(c) != len(before) or not all(
            a is x and b is y for (a, b), (x, y) in zip(c.items(), before))
    if t is set:
        return c != before
    if t is bytearray:
        return bytes(c) != before
    if is_tensor(c):
        import torch
        return c.shape != before.shape or c.requires_grad != before.requires_grad or \
            not torch.equal(c.detach(), before.detach())
    import numpy as np
    return c.shape != before.shape or not np.array_equal(c, before, equal_nan=True)


def encode_back(ep, found: list, snaps: list) -> list:
    """[[k, new contents], ...] for the containers of one argument that the call changed."""
    index = {id(c): k for k, c in enumerate(found)}
    out = []
    for k, (c, before) in enumerate(zip(found, snaps)):
        if not changed(c, before):
            continue

        def ref(x, k=k):
            n = index.get(id(x), -1)
            return {"K": n} if n > k else ep.encode(x, 1)
        t = type(c)
        if t is list:
            out.append([k, {"L": [x if type(x) in _SCALARS else ref(x) for x in c]}])
        elif t is dict:
            out.append([k, {"D": [[ep.encode(a, 1), ref(x)] for a, x in c.items()]}])
        else:
            out.append([k, ep.encode(c)])
    return out


def apply_back(ep, mine: dict, back) -> None:
    """The peer's report of what its call changed, put into this side's own containers.
    `mine`: argument position or keyword -> its containers, as walked when it was sent."""
    if not isinstance(back, list):
        raise WireError("a malformed copy-back")
    for item in back:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[2], list)):
            raise WireError("a malformed copy-back")
        key, count, changes = item
        found = mine.get(key) if isinstance(key, (int, str)) else None
        if found is None or not isinstance(count, int):
            raise WireError("a copy-back of an argument that held no container")
        if count != len(found):
            continue  # the peer saw another structure (keys that merged): nothing to match
        for change in changes:
            if not (isinstance(change, list) and len(change) == 2 and type(change[0]) is int
                    and 0 <= change[0] < len(found)):
                raise WireError("a copy-back of a container that was not passed")
            _put(ep, found, change[0], change[1])


def _put(ep, found: list, k: int, new) -> None:
    orig = found[k]
    if not isinstance(new, dict):
        raise WireError("a malformed copy-back")

    def resolve(x):
        if isinstance(x, dict) and len(x) == 1 and "K" in x:
            n = x["K"]
            if type(n) is not int or not k < n < len(found):
                raise WireError("a copy-back naming no container of the argument")
            return found[n]
        return ep.decode(x, 1)
    t = type(orig)
    if t is list:
        items = new.get("L")
        if "r" in new or not isinstance(items, list):
            raise WireError("a copy-back of another kind")
        orig[:] = [x if type(x) in _SCALARS else resolve(x) for x in items]
    elif t is dict:
        pairs = new.get("D")
        if "r" in new or not isinstance(pairs, list) or \
                not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise WireError("a copy-back of another kind")
        try:
            value = {ep.decode(a, 1): resolve(x) for a, x in pairs}
        except TypeError:
            raise WireError("a dict with an unhashable key") from None
        orig.clear()
        orig.update(value)
    else:
        put_value(orig, ep.decode(new))


def put_value(orig, new) -> None:
    t = type(orig)
    if t is set or t is bytearray:
        if type(new) is not t:
            raise WireError("a copy-back of another kind")
        if t is set:
            orig.clear()
            orig.update(new)
        else:
            orig[:] = new
    elif is_tensor(orig):
        if not is_tensor(new) or tuple(new.shape) != tuple(orig.shape):
            raise WireError("a copy-back of another shape")
        import torch
        with torch.no_grad():
            orig.copy_(new.to(orig.device, orig.dtype))
        if orig.is_leaf and orig.requires_grad != new.requires_grad and \
                (orig.is_floating_point() or orig.is_complex()):
            orig.requires_grad_(new.requires_grad)  # `p.requires_grad_(False)`: freezing
    else:
        import numpy as np
        if not is_ndarray(new) or new.shape != orig.shape:
            raise WireError("a copy-back of another shape")
        np.copyto(orig, new.astype(orig.dtype, copy=False))
