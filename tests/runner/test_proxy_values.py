"""Values across the call proxy of imported problems (docs/IMPORTED_GRADING.md), on shapes the
handbook's tests use: containers passed to a call and changed there come back changed (nested
ones, arrays inside lists, aliases the test holds), a 0-d array keeps its shape, a generator of
the submission iterates in a sync test, and the standard library's plain data (Fraction,
Decimal, datetime) and builtin classes cross by value. The submission side is
`judge_runner.proxy.serve` in a plain subprocess; the tests hold a guarded endpoint, as graded."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from judge.runner.proxy import Endpoint
from judge.runner.proxy.wire import Channel, WireError

MUTATING = """
import numpy as np
def add_one(xs): xs.append(1)
def fill(d): d["a"].append(2); d["b"] = 3; d.pop("gone", None)
def grow(xs): xs[0].append(9); xs.append([7])
def bump(ps):
    for p in ps:
        p += 1.0
def nothing(xs, d): return len(xs) + len(d)
def to_set(s, b): s.add(4); b[0] = 0x41
def kw(*, into): into.extend([5, 6])
def cycle(xs): xs.append(xs)
def keep(xs):
    global KEPT
    KEPT = xs
def later(): KEPT.append('late')
def calls_back(f):
    xs = [1]
    f(xs)
    return xs
"""


def test_lists_dicts_and_nested_ones_changed_in_the_call_come_back(served):
    imp = served(MUTATING)
    xs: list = []
    imp("add_one")(xs)
    assert xs == [1]
    inner: list = [1]
    d = {"a": inner, "gone": 0}
    imp("fill")(d)
    assert d == {"a": [1, 2], "b": 3} and inner == [1, 2] and d["a"] is inner
    first: list = [0]
    outer = [first]
    imp("grow")(outer)  # the outer list changed and the one inside it too: both, same objects
    assert outer == [[0, 9], [7]] and outer[0] is first and first == [0, 9]
    s, b = {1}, bytearray(b"xy")
    imp("to_set")(s, b)
    assert s == {1, 4} and b == bytearray(b"Ay")
    into = [4]
    imp("kw")(into=into)
    assert into == [4, 5, 6]
    same, dd = [1, 2], {"k": [3]}
    assert imp("nothing")(same, dd) == 3 and same == [1, 2] and dd == {"k": [3]}


def test_arrays_inside_a_list_changed_in_place_come_back(served):
    imp = served(MUTATING)
    a, c = np.zeros(2), np.zeros((2, 2), dtype=np.float32)
    ps = [a, (c,)]
    imp("bump")([a])
    assert a.tolist() == [1.0, 1.0]
    imp("bump")(ps[1])
    assert c.dtype == np.float32 and c.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_what_comes_back_is_bounded_and_only_during_the_call(served):
    imp = served(MUTATING)
    xs: list = []
    with pytest.raises(ValueError, match="nested deeper"):
        imp("cycle")(xs)  # encoding its new contents fails there, as a cyclic result would
    kept = ["a"]
    imp("keep")(kept)
    imp("later")()
    assert kept == ["a"]  # a copy crossed: later changes to it stay there
    # the other way: a test's callback changing the submission's list changes it there
    assert imp("calls_back")(lambda got: got.append(2)) == [1, 2]


def test_a_forged_copy_back_is_refused():
    from judge.runner.proxy.inplace import apply_back, containers
    ep = Endpoint.__new__(Endpoint)
    Endpoint.__init__(ep, Channel(*os.pipe()), guarded=True)
    xs, arr = [[1]], np.zeros(2)
    for bad in ([[0, 2, [[0, {"L": [{"K": 0}]}]]]],      # a container pointing at itself
                [[0, 2, [[5, {"L": []}]]]],               # a container not passed
                [[0, 2, [[1, {"D": []}]]]],               # a list sent back as a dict
                [[1, 1, [[0, {"A": {"dtype": "<f8", "shape": [3],
                                    "data": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}]]]],
                [[7, 1, []]]):
        with pytest.raises(WireError):
            apply_back(ep, {0: containers(xs), 1: containers(arr)}, bad)
    assert xs == [[1]] and arr.tolist() == [0.0, 0.0]


def test_zero_d_arrays_keep_their_shape_and_dtype(served):
    imp = served("import numpy as np\ndef shape_of(x): return np.shape(x), x.dtype.str\n"
                 "def zero(): return np.squeeze(np.ones((1, 1), dtype=np.float32))\n")
    assert imp("shape_of")(np.array(7, dtype=np.int16)) == ((), "<i2")
    z = imp("zero")()
    assert isinstance(z, np.ndarray) and z.shape == () and z.dtype == np.float32


def test_a_generator_of_the_submission_iterates_in_a_sync_test(served):
    imp = served("def count(n):\n    yield from range(n)\n"
                 "class Bag:\n    def __iter__(self): return iter([3, 4])\n")
    assert list(imp("count")(3)) == [0, 1, 2]
    assert [x * 2 for x in imp("Bag")()] == [6, 8]
    g = imp("count")(1)
    assert next(g) == 0
    with pytest.raises(StopIteration):
        next(g)


def test_standard_library_plain_data_and_builtin_classes_cross_by_value(served):
    imp = served("from fractions import Fraction\nfrom decimal import Decimal\n"
                 "import datetime as dt\n"
                 "def half(): return Fraction(1, 2)\n"
                 "def cost(): return Decimal('0.10')\n"
                 "def start(): return dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)\n"
                 "def day(): return dt.date(2020, 2, 29)\n"
                 "def span(x): return x * 2\n"
                 "def kinds(*xs): return [type(x).__name__ for x in xs]\n"
                 "def call(f, exc):\n    try:\n        f()\n    except exc:\n"
                 "        return 'caught'\n    return 'no'\n"
                 "def is_type(t): return isinstance(t, type) and t.__name__\n")
    assert imp("half")() == Fraction(1, 2) and imp("half")() < 1
    assert imp("cost")() == Decimal("0.10")
    assert imp("start")() < dt.datetime(2021, 1, 1, tzinfo=dt.timezone.utc)
    assert imp("day")() == dt.date(2020, 2, 29)
    assert imp("span")(dt.timedelta(seconds=1.5)) == dt.timedelta(seconds=3)
    assert imp("kinds")(Fraction(1, 3), Decimal(1), dt.time(1, 2)) == \
        ["Fraction", "Decimal", "time"]

    def boom():
        raise ConnectionError("boom")
    assert imp("call")(boom, ConnectionError) == "caught"
    assert imp("is_type")(dict) == "dict" and imp("is_type")(Fraction) == "Fraction"


def test_classes_by_name_only_of_plain_data_modules(served):
    imp = served("import os, subprocess\ndef get_os(): return os.system\n"
                 "def popen(): return subprocess.Popen\n"
                 "class Mine: pass\ndef mine(): return Mine\n")
    # a stand-in type for their own (peertypes.py), never ours by name
    import subprocess

    from judge.runner.proxy.peertypes import RemoteClass
    popen, mine = imp("popen")(), imp("mine")()
    assert type(popen) is RemoteClass and popen is not subprocess.Popen
    assert type(mine) is RemoteClass and isinstance(mine(), mine)
    from judge.runner.proxy.stdvalues import decode_std
    for bad in ({"Y": ["subprocess", "Popen"]}, {"Y": ["builtins", "__import__"]},
                {"Y": ["builtins", "print"]}, {"Y": ["os", "system"]},
                {"Q": [1, 0]}, {"Q": [True, 2]}, {"DEC": "x" * 300}, {"DT": "not a date"}):
        with pytest.raises(WireError):
            decode_std(bad)


def test_an_array_on_a_tests_object_written_in_place_there_is_written_here(served):
    from types import SimpleNamespace
    imp = served("def fill(o):\n    o.a[:] = 1.0\n    o.a[0] = 5.0\n"
                 "def look(o): return float(o.a.sum())\n"
                 "def swap(o): o.a = o.a * 0 + 2\n")
    a = np.zeros(3)
    o = SimpleNamespace(a=a, b=np.zeros(2))
    imp("fill")(o)  # read twice in one call: the second read sees the first write
    assert o.a is a and a.tolist() == [5.0, 1.0, 1.0] and o.b.tolist() == [0.0, 0.0]
    assert imp("look")(o) == 7.0 and a.tolist() == [5.0, 1.0, 1.0]
    imp("swap")(o)  # rebinding the attribute sets it, as before
    assert o.a is not a and o.a.tolist() == [2.0, 2.0, 2.0] and a.tolist() == [5.0, 1.0, 1.0]


def test_a_write_back_into_an_array_never_lent_is_refused():
    ep = Endpoint(Channel(*os.pipe()), guarded=True)
    for bad in ([[1, {"L": []}]], [[True, {"L": []}]], {"x": 1}):
        with pytest.raises(WireError):
            ep._sync(bad)


def test_slices_and_torch_devices_and_dtypes_cross_by_value(served):
    torch = pytest.importorskip("torch")
    imp = served("import torch\nclass Seq:\n    def __getitem__(self, i):\n"
                 "        if not isinstance(i, (int, slice)): raise TypeError(type(i).__name__)\n"
                 "        return list(range(10))[i]\n"
                 "def move(t, device, dtype): return t.to(device=device, dtype=dtype)\n"
                 "def kinds(): return torch.device('cpu'), torch.float16\n")
    assert imp("Seq")()[2:7:2] == [2, 4, 6] and imp("Seq")()[::-1][0] == 9
    out = imp("move")(torch.ones(2), torch.device("cpu"), torch.float64)
    assert out.dtype == torch.float64
    assert imp("kinds")() == (torch.device("cpu"), torch.float16)
    from judge.runner.proxy.stdvalues import decode_std
    for bad in ({"SL": [1.5, None, None]}, {"TDT": "torch.nn"}, {"TDV": "nowhere"}):
        with pytest.raises(WireError):
            decode_std(bad)
