"""The call proxy of imported problems (docs/IMPORTED_GRADING.md) on the shapes of seven of the
handbook's tests: dunders of the submission's functions (`f.__name__`, a `functools.wraps`
wrapper of a test's function, `inspect.signature`), a 200-deep value, an argument returned as
itself (`f(a) is a`), exception groups both ways (`except*`), a parameter frozen by the
submission (`p.requires_grad_(False)`), a module-level dict changed by item from the tests and
`vars(solution)`. Each with what the submission still cannot do. The submission side is
`judge_runner.proxy.serve` in a plain subprocess; the tests hold a guarded endpoint, as graded."""

from __future__ import annotations

import functools
import inspect
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from paths import REPO

from judge.runner.proxy import Endpoint, Remote, trusted
from judge.runner.proxy.endpoint import _argument
from judge.runner.proxy.wire import MAX_DEPTH, NESTED_RECURSION_LIMIT, Channel, WireError, parse


@pytest.fixture
def served(served_endpoint):
    """start(module_source) -> the stand-in module `solution`, asking the served one."""
    linked = trusted.L.ep

    def start(module_source: str):
        trusted.L.ep = served_endpoint(module_source)  # the stand-in module asks through it
        return trusted.SolutionModule("solution")

    yield start
    trusted.L.ep = linked


WRAPS = '''
import functools
def retry(n):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)
        return wrapper
    return deco
def rope_half(x, pos, base=10000.0, *, scale=1):
    """Rotates half."""
    return x
def names_of(f):
    return [getattr(f, a, None) for a in ("__name__", "__qualname__", "__doc__", "__module__")]
def peek(f, name):
    return f._ep.request("getattr", f._hid, name)
def signature_of_yours(f):
    return f._ep.request("signature", f._hid)
'''


def test_the_tests_read_the_metadata_of_the_submissions_functions(served):
    solution = served(WRAPS)
    f = solution.rope_half
    assert f.__name__ == "rope_half" and f.__qualname__ == "rope_half"
    assert f.__doc__ == "Rotates half." and f.__module__ == "solution"
    assert list(inspect.signature(f).parameters) == ["x", "pos", "base", "scale"]
    sig = inspect.signature(f)
    assert sig.parameters["base"].default == 10000.0
    assert sig.parameters["scale"].kind is inspect.Parameter.KEYWORD_ONLY
    assert not hasattr(f, "__globals__")  # only the metadata, not the function's insides


def test_a_wraps_wrapper_of_a_tests_function_has_its_name_and_doc(served):
    solution = served(WRAPS)

    @solution.retry(3)
    def g(x):
        """the doc"""
        return x * 2

    assert g(21) == 42
    assert g.__name__ == "g" and g.__doc__ == "the doc"
    assert g.__qualname__.endswith("<locals>.g")
    assert g.__wrapped__.__name__ == "g"  # the test's own function came back as itself
    assert g.__module__ == "solution"  # the tests' module name is not handed over


MEMO = '''
import functools
def memoize(fn):
    cache = {}
    @functools.wraps(fn)
    def wrapper(n):
        if n not in cache:
            cache[n] = fn(n)
        return cache[n]
    return wrapper
def bounce(f, n):
    return f(n + 1)
'''


def test_a_memoized_recursion_of_a_tests_function_nests_200_calls_deep(served):
    if os.environ.get("KVP_RECURSION_CHILD") != "1":
        # in a process of its own: a RecursionError at the raised limit, then the limit put
        # back, leaves CPython 3.11's AST depth bookkeeping off in this process (a later
        # ast.parse, pytest rewriting a module, raised "AST constructor recursion depth mismatch")
        here = f"{Path(__file__).resolve()}::test_a_memoized_recursion_of_a_tests_function_nests_200_calls_deep"
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", here],
                           cwd=REPO, env=dict(os.environ, KVP_RECURSION_CHILD="1"),
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout[-3000:] + r.stderr[-2000:]
        return
    solution = served(MEMO)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, NESTED_RECURSION_LIMIT))  # as trusted.connect does
    try:
        @solution.memoize
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)
        assert fib(200) == 280571172992510140037611932413038677189525
        assert fib.__name__ == "fib"

        def back(n):  # no bottom: a RecursionError, and both processes still answer
            return solution.bounce(back, n)
        with pytest.raises(RecursionError):
            back(0)
        assert solution.bounce(lambda n: n, 1) == 2
    finally:
        sys.setrecursionlimit(limit)


def test_the_submission_reads_no_dunder_of_the_tests_objects(served):
    solution = served(WRAPS)

    def secret():
        """kept"""
    secret.answer = 42
    name, qualname, doc, module = solution.names_of(secret)
    assert (name, doc, module) == ("secret", "kept", None)
    for attr in ("__globals__", "__code__", "__dict__", "__module__", "_private"):
        with pytest.raises(TypeError, match="not available to the submission"):
            solution.peek(secret, attr)
    with pytest.raises(TypeError, match="signature.* not available"):
        solution.signature_of_yours(secret)


def test_a_malformed_signature_is_a_protocol_error():
    from judge.runner.proxy.metadata import signature_from
    for bad in ([["x", 9, False, None]], [["not a name", 1, False, None]], "x",
                [["a", 1, True, 1], ["b", 1, False, None]]):  # a default before none
        with pytest.raises(WireError):
            signature_from(bad)


DEEP = '''
def evaluate(e):
    if isinstance(e, int):
        return e
    op, a, b = e
    return evaluate(a) + evaluate(b)
def build(n):
    e = 0
    for i in range(n):
        e = ("add", e, i)
    return e
'''


def test_a_200_deep_expression_crosses_both_ways(served):
    solution = served(DEEP)
    e = 0
    for i in range(200):
        e = ("add", e, i)
    assert solution.evaluate(e) == sum(range(200))
    assert solution.build(200) == e
    for _ in range(MAX_DEPTH):
        e = ("add", e, 0)
    with pytest.raises(ValueError, match="cannot cross"):
        solution.evaluate(e)
    assert solution.evaluate(3) == 3  # the connection still works


def test_a_frame_nested_past_the_cap_is_refused_without_recursing():
    for depth in (3 * MAX_DEPTH + 9, 20_000, 1_000_000):
        frame = ('{"t":"res","ok":' + "[" * depth + "]" * depth + "}").encode()
        with pytest.raises(WireError):
            parse(frame)
    short = ('{"a":' + "[" * 400 + "]" * 400 + "}").encode()  # deep but a short frame
    assert len(short) < 4000
    parse(short)  # within the JSON cap: it parses; the codec's own cap then applies


SAME = '''
def shard(t, size):
    if size == 1:
        return t
    return t[:1]
def bump(a):
    a += 1
    return a
def first(xs, *, also):
    return also
'''


def test_an_argument_returned_is_the_callers_own_object(served):
    import torch
    solution = served(SAME)
    q = torch.arange(4.0)
    assert solution.shard(q, 1) is q
    assert solution.shard(q, 2) is not q
    a = np.zeros(3)
    assert solution.bump(a) is a and a.tolist() == [1, 1, 1]
    xs, d = [1], {"k": [2]}
    assert solution.first(xs, also=d) is d


def test_an_answer_naming_another_argument_is_a_protocol_error(tmp_path):
    a_r, a_w = os.pipe()
    b_r, b_w = os.pipe()
    ep = Endpoint(Channel(b_r, a_w), guarded=True)
    data = json.dumps({"t": "res", "id": 1, "ok": {"P": 3}}).encode()
    os.write(b_w, struct.pack(">II", len(data), 0) + data)
    with pytest.raises(WireError, match="no argument"):
        ep.request("call", 1, [1])
    for p in (-1, 1, True, "kw", None):
        with pytest.raises(WireError):
            _argument(p, [[1]], {})
    for fd in (a_r, a_w, b_r, b_w):
        os.close(fd)


GROUPS = '''
def validate(reqs):
    errors = [ExceptionGroup(f"request {i}", [ValueError("v"), TypeError("t")])
              for i, r in enumerate(reqs) if not r]
    if errors:
        raise ExceptionGroup(f"{len(errors)} failed", errors)
def count(fn):
    out = {"value": 0}
    try:
        fn()
    except* ValueError as eg:
        out["value"] = len(eg.exceptions)
    return out
'''


def test_exception_groups_cross_both_ways(served):
    solution = served(GROUPS)
    try:
        solution.validate([{"a": 1}, {}, {}])
    except* TypeError as eg:
        assert eg.message == "2 failed"
        assert [g.message for g in eg.exceptions] == ["request 1", "request 2"]
        assert all(isinstance(g, ExceptionGroup) for g in eg.exceptions)
        assert [type(e) for e in eg.exceptions[0].exceptions] == [TypeError]
    except* ValueError:
        pass

    def mixed():
        raise ExceptionGroup("m", [ValueError(1), KeyError("k"), ValueError(2)])
    with pytest.raises(BaseExceptionGroup) as caught:
        solution.count(mixed)
    assert caught.value.message == "m"
    assert [type(e) for e in caught.value.exceptions] == [KeyError]

    def plain():
        raise ValueError("x")
    assert solution.count(plain) == {"value": 1}


FREEZE = '''
def freeze(layers, keep):
    n = 0
    for i, layer in enumerate(layers):
        for p in layer.parameters():
            p.requires_grad_(i == keep)
            n += i == keep
    return n
def unflag(t):
    t.requires_grad = False
def overwrite(layer):
    for p in layer.parameters():
        p.data.fill_(7.0)
def spoil(ref):
    t = ref()
    t.requires_grad_(False)
    t.fill_(0.0)
    return float(t.sum())
def list_theirs(f):
    return f._ep.request("namespace", None)
'''


def test_parameters_frozen_by_the_submission_are_frozen_in_the_tests_model(served):
    torch = pytest.importorskip("torch")
    solution = served(FREEZE)
    layers = [torch.nn.Linear(2, 2) for _ in range(3)]
    assert solution.freeze(layers, 1) == 2
    assert [[p.requires_grad for p in m.parameters()] for m in layers] == \
        [[False, False], [True, True], [False, False]]
    w = torch.ones(3, requires_grad=True)
    solution.unflag(w)
    assert w.requires_grad is False
    # values written into a parameter reach the model, as `layer.weight` read by attribute
    # already allowed; nothing but the parameters the test's model holds
    solution.overwrite(layers[0])
    assert layers[0].weight.detach().eq(7.0).all()


def test_the_submission_writes_into_no_tensor_of_the_tests_but_parameters(served):
    torch = pytest.importorskip("torch")
    solution = served(FREEZE)
    expected = torch.ones(3, requires_grad=True)  # a test's answer, returned by its function
    assert solution.spoil(lambda: expected) == 0.0  # the submission's copy
    assert expected.detach().tolist() == [1.0, 1.0, 1.0] and expected.requires_grad
    # no `vars()` of the tests' modules: a request no stand-in sends, so the run ends
    with pytest.raises(WireError, match="never serves"):
        solution.list_theirs(lambda: None)


COUNTER = '''
import numpy as np
COMM = {"all_reduce": 0}
LOG = []
_ORIGINAL = LOG
WORDS = np.array(["a", "b"])
def log_is_original():
    return LOG is _ORIGINAL
def reduce():
    COMM["all_reduce"] += 1
    LOG.append("r")
def test_one(parse_size):
    assert parse_size("1") == 1
def test_two(parse_size, *, strict=False):
    pass
def _helper():
    pass
'''


def test_a_module_level_dict_changed_by_item_from_the_tests(served):
    solution = served(COUNTER)
    solution.reduce()
    solution.COMM["all_reduce"] = 0
    solution.LOG.clear()
    solution.reduce()
    assert solution.COMM["all_reduce"] == 1 and solution.LOG == ["r"]


def test_vars_of_the_stand_in_lists_the_submissions_public_names(served):
    solution = served(COUNTER)
    found = [(n, f) for n, f in vars(solution).items()
             if n.startswith("test_") and callable(f) and f.__module__ == "solution"]
    assert [n for n, _ in found] == ["test_one", "test_two"]
    assert "_helper" not in vars(solution) and "reduce" in dir(solution)
    assert "WORDS" not in vars(solution)  # a string array cannot cross: left out, not an error
    vars(solution)["LOG"].append("v")  # the module's own list, as `solution.LOG` is
    assert solution.LOG == ["v"]
    from unittest import mock
    with mock.patch.object(solution, "LOG", ["patched"]):  # found in __dict__: set back after
        solution.reduce()
        assert solution.LOG == ["patched", "r"]
    solution.reduce()
    assert solution.LOG == ["v", "r"] and solution.log_is_original()  # its own, not a copy
    assert list(inspect.signature(found[0][1]).parameters) == ["parse_size"]
    found[0][1](lambda s: int(s))
    with pytest.raises(AssertionError):
        found[0][1](lambda s: 2)
    solution.extra = functools.partial(int)  # set by the tests: listed as the module has it
    assert "extra" in vars(solution)
    assert isinstance(vars(solution)["reduce"], Remote)
