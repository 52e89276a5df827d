"""Views across the call proxy (views.py): a view the submission makes of an array the tests
handed it, passed back to a function of the tests in the same call (cu-cublas-colmajor's
`sgemm(..., B.reshape(-1), ...)`) or returned, is a view of the tests' own array, as in one
process; a forged view reaching outside that array is refused. The submission side is
`judge_runner.proxy.serve` in a plain subprocess; the tests hold a guarded endpoint, as graded."""

from __future__ import annotations

import os

import numpy as np
import pytest

from judge.runner.proxy import Endpoint
from judge.runner.proxy.wire import Channel, WireError, encode_array

VIEWS = """
import numpy as np
def gemm_like(sgemm, A, B):
    C = np.empty(A.shape[0] * B.shape[1], dtype=A.dtype)
    sgemm(B.reshape(-1), A.T, A[1:, ::2], C)
    return C.reshape(A.shape[0], B.shape[1])
def transposed(A): return A.T
def copied(A): return A.copy()
def write_through(f, A):
    f(A.reshape(-1)[2:])
    return float(A.sum())        # the callee's write into the view is seen here too
def edited_first(f, A):
    A[0, 0] = 100.0              # changed here before it is passed: the value sent counts
    f(A.reshape(-1))
"""


def test_views_of_the_tests_arrays_are_views_of_them(served):
    imp = served(VIEWS)
    A = np.arange(12, dtype=np.float32).reshape(3, 4)
    B = np.arange(8, dtype=np.float32).reshape(4, 2)
    seen = []

    def sgemm(b, at, sub, c):
        seen.append((b, at, sub))
        c[...] = 1.0

    C = imp("gemm_like")(sgemm, A, B)
    b, at, sub = seen[0]
    assert np.shares_memory(b, B) and np.shares_memory(at, A) and np.shares_memory(sub, A)
    assert b.shape == (8,) and at.shape == (4, 3) and sub.shape == (2, 2)
    assert at.tolist() == A.T.tolist() and sub.tolist() == A[1:, ::2].tolist()
    assert C.tolist() == [[1.0] * 2] * 3          # its own buffer, written back as before
    got = imp("transposed")(A)
    assert np.shares_memory(got, A) and got.tolist() == A.T.tolist()
    assert not np.shares_memory(imp("copied")(A), A)


def test_writes_through_a_view_reach_both_sides(served):
    imp = served(VIEWS)
    A = np.zeros((2, 3))

    def bump(v):
        v += 1.0

    assert imp("write_through")(bump, A) == 4.0
    assert A.tolist() == [[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]
    got = []
    imp("edited_first")(got.append, A)
    assert got[0][0] == 100.0 and not np.shares_memory(got[0], A)   # a copy: bytes differed


def _endpoint(orig):
    ep = Endpoint.__new__(Endpoint)
    Endpoint.__init__(ep, Channel(*os.pipe()), guarded=True)
    ep.in_flight[7] = {0: [orig]}
    return ep


def test_a_forged_view_outside_the_array_is_refused():
    orig = np.arange(10, dtype=np.float64)
    ep = _endpoint(orig)

    def sent(copy, offset, strides, n=7, key=0, i=0):
        return ep.decode({"A": encode_array(copy), "V": [n, key, i, offset, strides]})

    ok = sent(orig[2:5], 16, [8])
    assert np.shares_memory(ok, orig) and ok.tolist() == [2.0, 3.0, 4.0]
    rev = sent(orig[::-1][:3], 72, [-8])                      # negative strides, inside
    assert np.shares_memory(rev, orig) and rev.tolist() == [9.0, 8.0, 7.0]
    for offset, strides, shape in ((80, [8], 1), (72, [8], 2), (-8, [8], 1), (8, [-16], 2),
                                   (0, [8 * 10**6], 2), (0, [0, 8], (2, 11))):
        copy = np.zeros(shape)
        with pytest.raises(WireError):
            sent(copy, offset, strides if copy.ndim == len(strides) else [8] * copy.ndim)
    for bad in ([7, 0, 0, 0], [7, 0, 0, 0.5, [8]], [7, 0, 0, 0, [8, 8]], [7, 0, 0, 0, ["8"]]):
        with pytest.raises(WireError):
            ep.decode({"A": encode_array(orig[:1]), "V": bad})
    # not a call in progress, not an array of it, another dtype, misaligned, other bytes:
    # the copy that crossed, as before
    for args in ((orig[:2], 0, [8], 8), (orig[:2], 0, [8], 7, 3), (orig[:2], 0, [8], 7, 0, 1),
                 (orig[:2].astype(np.float32), 0, [4]), (orig[:2], 4, [8]),
                 (orig[:2] + 1, 0, [8])):
        got = sent(*args)
        assert not np.shares_memory(got, orig) and got.tolist() == args[0].tolist()
    ep_t = _endpoint(np.arange(10.0).reshape(2, 5).T)          # not C-contiguous there
    got = ep_t.decode({"A": encode_array(np.arange(10.0)[:2]), "V": [7, 0, 0, 0, [8]]})
    assert got.base is None or not np.shares_memory(got, ep_t.in_flight[7][0][0])
