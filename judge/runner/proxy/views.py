"""A view the submission makes of an array it was handed, passed back to the tests in the same
call, is a view of the tests' own array there, as in one process: cu-cublas-colmajor's student
calls the tests' `sgemm(..., B.reshape(-1), ...)` and the test asks `np.shares_memory(buf, B)`.

The submission side names such an array by the call in progress (the request's number, as the
trusted side numbered it), the argument (position or keyword), the array's number in that
argument's walk (inplace.containers, the order copy-back uses), and the view's byte offset and
strides; its value crosses too. The trusted side rebuilds it with `as_strided` over its own
array only when that array is still in that call's arguments, C-contiguous, of the dtype and
with the bytes the submission's copy had (so the copy's layout is its layout), and the value
there equals the value sent: otherwise the copy is used, as before. An offset or strides that
reach one byte outside the original's buffer are WireError: `as_strided` does not check, and
such a view would read or write the trusted process's memory."""

from __future__ import annotations

from .wire import WireError, is_ndarray

MAX_BASES = 64  # views of views of views...


def _address(a) -> int:
    return a.__array_interface__["data"][0]


def view_spec(ep, v):
    """[request, argument, number, offset, strides] when `v` is a view of an array received
    in a call this thread is serving, or None. The submission side only."""
    stack = getattr(ep.tl, "received", None)
    if not stack:
        return None
    bases = []
    b = v
    for _ in range(MAX_BASES):
        if not is_ndarray(b):
            break
        bases.append(b)
        b = b.base
    for entry in reversed(stack):
        n, passed, index = entry
        if index is None:  # once a call: the arrays it received, by identity
            index = entry[2] = {id(r): (key, i) for key, found in passed.items()
                                for i, r in enumerate(found) if is_ndarray(r)}
        for x in bases:
            hit = index.get(id(x))
            if hit is not None:
                r = passed[hit[0]][hit[1]]
                return [n, hit[0], hit[1], _address(v) - _address(r), list(v.strides)]
    return None


def rebuild(ep, spec, copy):
    """The tests' own array seen as the submission's view, or `copy` where it cannot be."""
    import numpy as np

    if not isinstance(spec, list) or len(spec) != 5:
        raise WireError("a malformed view")
    n, key, i, offset, strides = spec
    if not (isinstance(strides, list) and len(strides) == copy.ndim and
            all(type(s) is int for s in strides) and type(offset) is int and type(i) is int):
        raise WireError("a malformed view")
    passed = getattr(ep, "in_flight", {}).get(n) if type(n) is int else None
    found = passed.get(key) if passed is not None and type(key) in (int, str) else None
    orig = found[i] if found is not None and 0 <= i < len(found) else None
    if orig is None or not is_ndarray(orig) or not orig.flags.c_contiguous or orig.dtype != copy.dtype:
        return copy
    if copy.size == 0 or offset % copy.itemsize:
        return copy  # nothing to see, or not a view numpy itself makes of this dtype
    lo = hi = offset
    for extent, stride in zip(copy.shape, strides):
        reach = (extent - 1) * stride
        if reach < 0:
            lo += reach
        else:
            hi += reach
    if lo < 0 or hi + copy.itemsize > orig.nbytes:
        raise WireError("a view reaching outside the array it is a view of")
    start = orig.reshape(-1)[offset // copy.itemsize:]  # C-contiguous: a view, never a copy
    view = np.lib.stride_tricks.as_strided(start, shape=copy.shape, strides=strides)
    if view.tobytes() != copy.tobytes():
        return copy  # written over there since it crossed: the value sent is what it is
    return view
