"""Imported problems (the handbook's format) are graded with the handbook's harness, soundly: the
tests run in a trusted process, the submission in another (docs/IMPORTED_GRADING.md). Fixtures in
tests/fixtures/handbook_graded are problems written for these tests in the handbook's format."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from imported_bank import imported_bank
from served_submission import start_served

import reference  # noqa: F401  (puts `checker` on sys.path, as a test file imports it)
from judge import check_problem, grade
from judge.runner import checker as ck
from judge.runner.proxy import Endpoint, Remote
from judge.runner.proxy.wire import MAX_FRAME, Channel, WireError, parse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_graded" / "book"

# gradings of the submission: on the cold path and as forks of the warm zygote (both processes;
# tests/sandbox_paths.py, tests/grading/test_imported_warm.py)
BOTH_PATHS = pytest.mark.usefixtures("sandbox_path")

pytestmark = pytest.mark.usefixtures("run_cache")


@pytest.fixture(scope="module")
def bank(tmp_path_factory) -> dict:
    return imported_bank(tmp_path_factory, FIXTURES, "graded")


def solution(name: str) -> str:
    return (FIXTURES / name / "solution.py").read_text(encoding="utf-8")


# ---- the checker helpers, with the handbook's signatures ---------------------------------

def test_check_signature_and_words():
    import checker  # the flat module a test file imports

    assert checker.check is ck.check
    ck.check([1, [2, 3]], [1, [2, 3]], "嵌套")
    with pytest.raises(AssertionError, match=r"get\(1\)（第一个不同在 \[1\]\[0\]）\n  期望"):
        ck.check([1, [5, 3]], [1, [2, 3]], what="get(1)")
    with pytest.raises(AssertionError, match="^结果"):
        ck.check(1, 2)
    with pytest.raises(AssertionError, match="形状不对"):
        ck.check(np.zeros(3), np.zeros((3, 1)))
    with pytest.raises(AssertionError, match="有 1 个元素不对，第一个在下标 \\(1,\\)"):
        ck.check(np.array([1, 2, 3]), np.array([1, 9, 3]), "数组")
    with pytest.raises(AssertionError, match="k=2"):
        ck.check((1,), [1], msg="k=2")  # the older keyword still works


def test_check_close_arrays_lists_and_tensors():
    torch = pytest.importorskip("torch")
    ck.check_close([0.1 + 0.2, 1.0], (0.3, 1.0))
    ck.check_close(0.3000001, 0.3, rtol=1e-5, atol=1e-6, what="标量")
    with pytest.raises(AssertionError, match="误差太大，1 个元素超出容差"):
        ck.check_close([1.0, 2.5], [1.0, 2.0], what="列表")
    with pytest.raises(AssertionError, match="出现了 NaN"):
        ck.check_close([float("nan")], [1.0])
    ck.check_close(torch.ones(2, 3, dtype=torch.bfloat16), np.ones((2, 3)), what="bf16")
    ck.check(torch.arange(4), np.arange(4))
    with pytest.raises(AssertionError, match="形状不对"):
        ck.check_close(torch.zeros(2, 3), torch.zeros(3, 2))


def test_raises_and_time_limit_are_context_managers():
    with ck.raises(MemoryError, "空间不够时 append"):
        raise MemoryError
    with pytest.raises(AssertionError, match="空间不够时 append：应该抛出 MemoryError，但没有"):
        with ck.raises(MemoryError, "空间不够时 append"):
            pass
    with pytest.raises(AssertionError, match="应该抛出 KeyError，实际抛出了 ValueError"):
        with ck.raises(KeyError):
            raise ValueError("x")
    assert isinstance(ck.raises(ValueError, int, "x"), ValueError)
    with ck.time_limit(5.0, "快的代码"):
        sum(range(1000))
    with pytest.raises(AssertionError, match="慢的代码：用了 .* 秒，超过限制 0.00 秒"):
        with ck.time_limit(0.001, "慢的代码"):
            sum(i * i for i in range(300_000))
    assert ck.SPEED_FACTOR == 1.0 and ck.IN_BROWSER is False


def test_skip_and_devices():
    with pytest.raises(ck.Skip, match="为什么"):
        ck.skip("为什么")
    assert ck.need_torch() == ck.torch_device() in ("cpu", "cuda", "mps")
    if ck.torch_device() != "cuda":
        with pytest.raises(ck.Skip, match="NVIDIA GPU"):
            ck.need_cuda()


# ---- the wire treats every byte as hostile ------------------------------------------------

@pytest.mark.parametrize("data, what", [
    (b"[" * 100_000 + b"]" * 100_000, "JSON|nested"),
    # past the JSON nesting cap (a value's 256 levels: three JSON levels each at most)
    (b'{"a": ' + b"[" * 800 + b"1" + b"]" * 800 + b"}", "nested"),
    (b"\x80not json", "JSON"),
    (b"[1, 2]", "not an object"),
    (b'{"n": ' + b"9" * 5000 + b"}", "JSON|too large"),
])
def test_hostile_frames_are_refused(data, what):
    with pytest.raises(WireError, match=what):
        parse(data)


def test_oversized_frame_and_bad_values_are_refused():
    r, w = os.pipe()
    ch = Channel(r, w)
    os.write(w, (MAX_FRAME + 1).to_bytes(4, "big") + (0).to_bytes(4, "big"))  # JSON, attachments
    with pytest.raises(WireError, match="cap"):
        ch.recv()
    ep = Endpoint(ch, guarded=True)
    for bad in ({"H": 12345}, {"A": {"dtype": "|O", "shape": [1], "data": ""}},
                {"A": {"dtype": "<f8", "shape": [4], "data": "AAAA"}}, {"R": -1}, [1],
                {"Q": 1}, {"X": {"torch": "os.system", "dtype": "<f4", "shape": [], "data": ""}}):
        with pytest.raises(WireError):
            ep.decode(bad)
    os.close(r)
    os.close(w)


def _served(module_source: str, tmp_path: Path):
    """A submission side (judge_runner.proxy.serve) in a plain subprocess, and a guarded endpoint."""
    procs: list = []
    ep = start_served(tmp_path, module_source, procs)
    return procs[0], ep


def test_proxy_values_handles_and_in_place_copy_back(tmp_path):
    proc, ep = _served(
        "class Any:\n    def __eq__(self, o): return True\n    __hash__ = object.__hash__\n"
        "def scale(x, k):\n    x *= k\n    return x.sum()\n"
        "def any_value(): return Any()\n"
        "def call_back(f): return f(3) + 1\n"
        "def peek(f): return f._secret\n"
        "def dunder(f): return f.__globals__\n", tmp_path)
    try:
        scale = ep.request("import", None, "scale")
        x = np.ones(4, dtype=np.float32)
        assert scale(x, 2) == 8.0 and x.tolist() == [2.0] * 4
        forged = ep.request("import", None, "any_value")()
        assert isinstance(forged, Remote)
        assert forged != [1, 2] and not (forged == 5)  # never asks the submission
        with pytest.raises(TypeError):
            forged < 3  # noqa: B015
        assert ep.request("import", None, "call_back")(lambda v: v * 10) == 31
        with pytest.raises(TypeError, match="not available to the submission"):
            ep.request("import", None, "peek")(lambda v: v)
        with pytest.raises(AttributeError):  # never even asked for: no dunder crosses
            ep.request("import", None, "dunder")(lambda v: v)
    finally:
        proc.kill()
        proc.wait()


# ---- grading: the handbook's solution AC, wrong files not, attacks not -------------------

def test_handbook_style_problems_prove_themselves(bank):
    res = check_problem(bank["tiny-lru"])
    assert res.errors == [], res.errors  # plain asserts pass `judge check` (no observations)


@pytest.mark.parametrize("name", ["tiny-lru", "gather-some", "scale-rows"])
@BOTH_PATHS
def test_the_solution_is_accepted_and_the_starter_is_not(bank, name):
    r = grade(bank[name], solution(name))
    assert str(r.verdict) == "AC", [(t.name, str(t.verdict), t.failure) for t in r.tests]
    verdicts = {t.name.split("::")[1]: str(t.verdict) for t in r.tests}
    if name == "scale-rows" and ck.torch_device() != "cuda":
        assert verdicts["test_on_the_gpu"] == "SKIP"  # need_cuda on a CPU: skipped, not failed
    if name == "gather-some":  # async tests, a coroutine factory run concurrently: peak 2
        assert verdicts["test_example"] == "AC"
    starter = (FIXTURES / name / "starter.py").read_text(encoding="utf-8")
    s = grade(bank[name], starter)
    assert str(s.verdict) == "RE" and s.score == 0.0  # NotImplementedError: a runtime error


@BOTH_PATHS
def test_a_wrong_answer_is_WA_and_plain_asserts_count(bank):
    wrong = solution("tiny-lru").replace("return key in self.data", "return True")
    r = grade(bank["tiny-lru"], wrong)
    v = {t.name.split("::")[1]: str(t.verdict) for t in r.tests}
    assert str(r.verdict) == "WA" and v["test_contains_with_plain_asserts"] == "WA"
    assert v["test_example"] == "AC"


@BOTH_PATHS
def test_a_slow_solution_fails_time_limit_measured_on_the_submission(bank):
    slow = solution("tiny-lru").replace(
        "    def get(self, key):\n",
        "    def get(self, key):\n        sum(i for i in range(50_000))\n")
    r = grade(bank["tiny-lru"], slow, suite="hidden")
    v = {t.name.split("::")[1]: t for t in r.tests}
    assert str(v["test_many_operations"].verdict) == "WA"
    assert "超过限制" in (v["test_many_operations"].failure.message or "") or \
        v["test_many_operations"].failure.hidden


ATTACKS = {
    "patch checker": """
import sys, checker
checker.check = lambda *a, **k: None
checker.raises = lambda *a, **k: __import__("contextlib").nullcontext()
sys.modules["checker"] = checker
class CapacityError(ValueError): pass
class TinyLRU:
    def __init__(self, n): pass
    def get(self, k): return None
    def put(self, k, v): pass
""",
    "MagicMock answers imports": """
import sys
from unittest.mock import MagicMock
import checker
checker.check = MagicMock()
def __getattr__(name):
    return MagicMock()
""",
    "frame inspection": """
import sys
def _patch():
    f = sys._getframe()
    while f is not None:
        g = f.f_globals
        if "check" in g:
            g["check"] = lambda *a, **k: None
        f = f.f_back
_patch()
class CapacityError(ValueError): pass
class TinyLRU:
    def __init__(self, n): _patch()
    def get(self, k): _patch(); return None
    def put(self, k, v): _patch()
    def __len__(self): return 2
""",
    "gc": """
import gc
for o in gc.get_objects():
    if callable(o) and getattr(o, "__name__", "") in ("check", "_describe"):
        try: o.__code__ = (lambda *a, **k: None).__code__
        except Exception: pass
class CapacityError(ValueError): pass
class TinyLRU:
    def __init__(self, n): pass
    def get(self, k): return "a"
    def put(self, k, v): pass
    def __len__(self): return 2
""",
    "patch builtins": """
import builtins
builtins.AssertionError = type("Nope", (BaseException,), {})
builtins.len = lambda x: 2
class Anything:
    def __eq__(self, o): return True
    def __ne__(self, o): return False
    __hash__ = object.__hash__
class CapacityError(ValueError): pass
class TinyLRU:
    def __init__(self, n): pass
    def get(self, k): return Anything()
    def put(self, k, v): pass
    def __len__(self): return Anything()
""",
    "forged runner lines": """
import json, os, sys
line = json.dumps({"ev": "test_finished", "test": "test_examples.py::test_example",
                   "outcome": "passed"}) + "\\n"
for fd in range(3, 64):
    try: os.write(fd, line.encode())
    except OSError: pass
print(json.dumps({"ev": "test_finished", "outcome": "passed"}))
class CapacityError(ValueError): pass
class TinyLRU:
    def __init__(self, n): pass
    def get(self, k): return None
    def put(self, k, v): pass
""",
}


@BOTH_PATHS
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_forging_attacks_get_no_AC(bank, name):
    r = grade(bank["tiny-lru"], ATTACKS[name], suite="public")
    assert str(r.verdict) not in ("AC", "IE"), (name, r.verdict, r.ie_cause)
    assert r.score == 0.0


@BOTH_PATHS
def test_reaching_into_the_tests_objects_is_refused(bank):
    attack = solution("gather-some").replace(
        "    sem = asyncio.Semaphore(limit)",
        "    for f in factories:\n        f.__globals__['check'] = None\n"
        "    sem = asyncio.Semaphore(limit)")
    r = grade(bank["gather-some"], attack, suite="public")
    assert str(r.verdict) == "RE" and r.score == 0.0
