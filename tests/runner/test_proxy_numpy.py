"""numpy's small values across the call proxy of imported problems (npvalues.py), on the shapes
the handbook's cuda book has: a kernel allocating through a helper of the tests with
`np.int32` (the class), a `.dtype` handed to `np.zeros(n, dtype=...)`, a gradient that is a
numpy scalar whose `.shape` the test reads. The submission side is `judge_runner.proxy.serve` in a
plain subprocess; the tests hold a guarded endpoint, as graded."""

from __future__ import annotations

import numpy as np
import pytest

from judge.runner.proxy.codec import Codec
from judge.runner.proxy.wire import WireError, attachment

KERNELS = """
import numpy as np
def histogram(alloc, n):          # the tests' allocator, called with numpy's class
    out = alloc(n, np.int32)
    out[1] += 3
    return out
def like(alloc, a):               # ... and with an array's dtype
    return alloc(a.shape[0], a.dtype)
def dtype_of(a): return a.dtype
def cast(xs, t): return np.asarray(xs, dtype=t)
def types(t, u): return t.__name__, u.__name__, t is u
def is_float_type(t): return issubclass(t, np.floating), t is np.float32
def grad_total(a): return a.sum()                 # a numpy scalar, not a float
def scalars(): return np.float32(1.5), np.bool_(True), np.int64(7), np.uint8(250)
def describe(x): return type(x).__name__, x.dtype.str, (x * 3).dtype.str
"""


def test_numpy_scalar_types_cross_as_themselves(served):
    imp = served(KERNELS)
    out = imp("histogram")(lambda n, t: np.zeros(n, dtype=t), 3)
    assert out.dtype == np.int32 and out.tolist() == [0, 3, 0]
    assert imp("cast")([1, 2], np.float32).dtype == np.float32
    assert imp("types")(np.longlong, np.int64) == ("longlong", "int64", False)
    assert imp("is_float_type")(np.float32) == (True, True)
    assert imp("is_float_type")(np.floating) == (True, False)   # the abstract class too
    assert imp("is_float_type")(np.int16) == (False, False)


def test_dtypes_cross_by_value(served):
    imp = served(KERNELS)
    a = np.arange(4, dtype=np.float32)
    got = imp("dtype_of")(a)
    assert type(got) is type(np.dtype("float32")) and got == np.float32
    out = imp("like")(lambda n, dt: np.zeros(n, dtype=dt), a)
    assert out.dtype == np.float32 and out.shape == (4,)
    assert imp("dtype_of")(np.zeros(2, dtype=">i2")).str == ">i2"   # byte order kept
    assert imp("cast")([1], np.dtype("complex64")).dtype == np.complex64


def test_numpy_scalars_keep_their_dtype(served):
    imp = served(KERNELS)
    g = imp("grad_total")(np.ones((2, 3)))
    assert type(g) is np.float64 and g.shape == () and g == 6.0
    f32, b, i64, u8 = imp("scalars")()
    assert (type(f32), type(b), type(i64), type(u8)) == (np.float32, np.bool_, np.int64,
                                                         np.uint8)
    assert f32 == 1.5 and b and i64 == 7 and u8 == 250
    # the tests' numpy scalar is one over there too: float32 arithmetic stays float32
    assert imp("describe")(np.float32(0.1)) == ("float32", "<f4", "<f4")
    assert imp("describe")(np.int8(3)) == ("int8", "|i1", "|i1")
    assert imp("describe")(np.float64(2.0))[0] == "float64"


def test_object_dtypes_and_forged_numpy_values_are_refused():
    c = Codec(guarded=True)
    for v in (np.dtype(object), np.dtype([("a", "<f4")]), np.dtype("U3"), np.object_,
              np.str_, np.datetime64):
        assert "R" in c.encode(v)          # not by value: a handle, as any other object
    assert c.encode(np.str_("x")) == "x"    # a string scalar travels as its str, as before
    for bad in ({"NS": ["|O", attachment(bytes(8))]},          # an object scalar
                {"NS": ["<f4", attachment(bytes(3))]},         # bytes not its size
                {"NS": ["<f4"]}, {"NS": "x"},
                {"NS": [["<f4"], attachment(bytes(4))]},
                {"ND": "O"}, {"ND": "U5"}, {"ND": "x" * 100}, {"ND": "(2,)f4"},
                {"ND": 3}, {"NT": "O"}, {"NT": "os"}, {"NT": "S"}, {"NT": "M"},
                {"NT": ["i"]}):
        with pytest.raises(WireError):
            c.decode(bad)
    assert c.decode({"NT": "floating"}) is np.floating
    assert c.decode({"NS": ["<f4", attachment(np.float32(2.5).tobytes())]}) == np.float32(2.5)


def test_a_generator_functions_return_value_is_yield_froms_result(served):
    # cu-warp-reduce's shape: the test's kernel does `s = yield from warp_sum(t, v)` over the
    # student's generator, and writes `s`; it was None (StopIteration's value was dropped)
    imp = served("def steps(v):\n    for d in (4, 2, 1):\n        v += yield d\n    return v\n")
    steps = imp("steps")

    def kernel():
        s = yield from steps(np.float32(1.0))
        return s

    g, sent = kernel(), []
    asked = next(g)
    with pytest.raises(StopIteration) as done:
        while True:
            sent.append(asked)
            asked = g.send(np.float32(asked * 10))
    assert sent == [4, 2, 1]
    assert done.value.value == 71.0 and type(done.value.value) is np.float32


LENDING = """
import numpy as np
class Param:
    def __init__(self, data): self.data = np.asarray(data, dtype=float)
def total(*ps): return float(sum(p.data.sum() for p in ps))
def renew(p): p.data = np.zeros(1)
"""


def test_the_tests_writes_into_an_attribute_array_reach_the_submissions_object(served):
    # cu-autograd-engine's numeric gradient: `p.data[idx] = old + eps`, then the student's
    # code reads p.data again
    imp = served(LENDING)
    p = imp("Param")([1.0, 2.0, 3.0])
    p.data[1] = 20.0                                  # its copy is dropped at once
    assert imp("total")(p) == 24.0 and p.data.tolist() == [1.0, 20.0, 3.0]
    kept = p.data
    kept += 1.0                                       # a copy kept and written later
    assert imp("total")(p) == 27.0
    q = imp("Param")([0.0])
    assert imp("total")(p, q) == 27.0                 # unchanged: nothing sent again
    imp("renew")(p)            # the array the test's copy stood for is gone there ...
    kept[:] = 5.0
    assert imp("total")(p) == 0.0                     # ... and its write goes nowhere


NODES = """
class Node:
    def __init__(self, parents=()): self.parents = list(parents)
    def backward(self, seen):
        seen.append(1)
        return len(seen)
def run(nodes):
    seen = []
    for n in nodes:
        n.backward(seen)
    return len(seen)
"""


def test_a_method_taken_from_the_class_dict_and_wrapped_by_the_tests_calls_the_original(served):
    # cu-autograd-engine's `originals = {c: c.__dict__["backward"]}`, each class's backward
    # replaced by a counting wrapper calling `f(self, grad)`
    imp = served(NODES)
    Node = imp("Node")
    original = Node.__dict__["backward"]
    calls = []

    def counting(self, seen):
        calls.append(1)
        return original(self, seen)

    Node.backward = counting
    try:
        assert imp("run")([Node(), Node(), Node()]) == 3
    finally:
        Node.backward = original
    assert len(calls) == 3
    assert imp("run")([Node()]) == 1 and len(calls) == 3     # put back: the student's own
