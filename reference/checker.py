"""Test helpers for problems imported from the handbook's practice folder (`judge import`).

The handbook's `test.py` files are plain `test_*` functions that do `from checker import ...`;
this module gives them the same names, so an imported test runs unchanged:

    check(got, expected, msg=None)                    equal, or AssertionError naming where
    check_close(got, expected, rtol=1e-5, atol=1e-8)  numbers, nested lists, tensors, arrays
    raises(ExcType, fn, *args)  /  with raises(ExcType): ...
    with time_limit(seconds): ...                     CPU seconds of this process
    skip(reason), need_torch(), need_cuda()           skip the test (and say why)

Mismatches are explained in words: expected, got, and where inside a nested value.

Inside the judge, a check that passes also records what it expected as an observation. The
judge compares those with the reference's run, so a submission cannot pass a test by faking the
runner's output without knowing the expected values, and `judge check` sees that every test
observes something. So `expected` must not be computed from the code under test: a test that
wants a property (`check(len(set(ids)), len(ids))`) should check it as `check(ok, True)`.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from contextlib import contextmanager

__all__ = ["check", "check_close", "raises", "time_limit", "skip", "need_torch", "need_cuda",
           "TimeLimitExceeded"]

MAX_RECORDED = 1000      # checks recorded per test; a check in a long loop stops recording here
MAX_PLAIN_CHARS = 2000   # larger expected values are recorded as a digest
_SHOWN = 160


class TimeLimitExceeded(AssertionError):
    """The body of `time_limit(seconds)` used more CPU time than allowed."""


# ---- explaining a mismatch ----------------------------------------------------------------

def _short(value) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _SHOWN else text[: _SHOWN - 4] + " ..."


def _is_array(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "tolist") and not isinstance(x, (int, float))


def _as_list(x):
    if _is_array(x):
        if hasattr(x, "detach"):  # a torch tensor, maybe on a GPU
            x = x.detach().cpu()
        return x.tolist()
    return x


def _same(got, expected) -> bool:
    try:
        return bool(got == expected)
    except Exception:
        return False


def _close(rtol: float, atol: float):
    def leaf(got, expected) -> bool:
        nums = (int, float)
        if isinstance(got, nums) and isinstance(expected, nums) and \
                not isinstance(got, bool) and not isinstance(expected, bool):
            g, e = float(got), float(expected)
            if math.isnan(e) or math.isnan(g):
                return math.isnan(e) and math.isnan(g)
            if math.isinf(e) or math.isinf(g):
                return g == e
            return abs(g - e) <= atol + rtol * abs(e)
        return _same(got, expected)
    return leaf


def _mismatch(got, expected, leaf, path: str = ""):
    """(path, got part, expected part, note) of the first difference, or None."""
    if _is_array(got) or _is_array(expected):
        gs, es = getattr(got, "shape", None), getattr(expected, "shape", None)
        if gs is not None and es is not None and tuple(gs) != tuple(es):
            return path, got, expected, f"shape {tuple(gs)} where {tuple(es)} was expected"
        return _mismatch(_as_list(got), _as_list(expected), leaf, path)
    seqs = (list, tuple)
    if isinstance(expected, seqs) and isinstance(got, seqs):
        if type(got) is not type(expected):
            return path, got, expected, (f"a {type(got).__name__} where a "
                                         f"{type(expected).__name__} was expected")
        for i, (g, e) in enumerate(zip(got, expected)):
            found = _mismatch(g, e, leaf, f"{path}[{i}]")
            if found:
                return found
        if len(got) != len(expected):
            return path, got, expected, f"length {len(got)} where {len(expected)} was expected"
        return None
    if isinstance(expected, dict) and isinstance(got, dict):
        for k in expected:
            if k not in got:
                return path, got, expected, f"key {k!r} is missing"
            found = _mismatch(got[k], expected[k], leaf, f"{path}[{k!r}]")
            if found:
                return found
        extra = [k for k in got if k not in expected]
        return (path, got, expected, f"unexpected key {extra[0]!r}") if extra else None
    return None if leaf(got, expected) else (path, got, expected, "")


def _explain(found, got, expected, msg) -> str:
    path, g, e, note = found
    head = f"{msg}: " if msg else ""
    where = f"at {path}: " if path else ""
    text = f"{head}{where}expected {_short(e)}, got {_short(g)}"
    if note:
        text += f" ({note})"
    if path:
        text += f"; whole value: expected {_short(expected)}, got {_short(got)}"
    return text


# ---- recording for the judge --------------------------------------------------------------

def _plain(value, depth: int = 0):
    """`value` as JSON data that is the same in every run that computes the same value."""
    if depth > 50:
        return "..."
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if _is_array(value):
        return _array_digest(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _plain(v, depth + 1) for k, v in value.items()}
        return {"items": [[_plain(k, depth + 1), _plain(v, depth + 1)] for k, v in value.items()]}
    if isinstance(value, (set, frozenset)):
        return {"set": sorted((_plain(v, depth + 1) for v in value), key=repr)}
    text = _short(value)
    # A default repr names a memory address, which differs between the two runs.
    return type(value).__qualname__ if " at 0x" in text else text


def _array_digest(value):
    shape = [int(n) for n in value.shape]
    if math.prod(shape) <= 64:
        return {"shape": shape, "values": _plain(_as_list(value))}
    data = json.dumps(_as_list(value), allow_nan=True).encode()
    return {"shape": shape, "sha256": hashlib.sha256(data).hexdigest()[:20]}


def _runner():
    return sys.modules.get("judge_runner.plugin")


_counter = {"test": None, "n": 0}


def _record(what: str, expected) -> None:
    """Inside the judge: one observation per passing check; elsewhere nothing."""
    runner = _runner()
    test = getattr(getattr(runner, "S", None), "current", None)
    if test is None or not hasattr(runner, "record"):
        return
    if _counter["test"] != test:
        _counter.update(test=test, n=0)
    _counter["n"] += 1
    if _counter["n"] > MAX_RECORDED:
        return
    value = _plain(expected)
    text = json.dumps(value, allow_nan=True, sort_keys=True)
    if len(text) > MAX_PLAIN_CHARS:
        value = {"sha256": hashlib.sha256(text.encode()).hexdigest()[:20], "chars": len(text)}
    runner.record(f"{what} {_counter['n']}: the expected value", value)


# ---- the helpers --------------------------------------------------------------------------

def check(got, expected, msg: str | None = None) -> None:
    """`got` equals `expected` (==, element by element inside lists, tuples, dicts, tensors)."""
    found = _mismatch(got, expected, _same)
    if found:
        raise AssertionError(_explain(found, got, expected, msg))
    _record("check", expected)


def check_close(got, expected, rtol: float = 1e-5, atol: float = 1e-8,
                msg: str | None = None) -> None:
    """Numbers within |got - expected| <= atol + rtol * |expected|, anywhere inside nested
    lists, tuples, dicts, tensors and arrays (shapes must agree); NaN matches only NaN."""
    found = _mismatch(got, expected, _close(rtol, atol))
    if found:
        raise AssertionError(_explain(found, got, expected, msg))
    _record("check_close", expected)


def _names(exc_type) -> str:
    types = exc_type if isinstance(exc_type, tuple) else (exc_type,)
    return " or ".join(t.__name__ for t in types)


class _Raises:
    def __init__(self, exc_type):
        self.exc_type, self.value = exc_type, None

    def __enter__(self):
        return self

    def __exit__(self, etype, exc, tb):
        if etype is None:
            raise AssertionError(f"expected {_names(self.exc_type)} to be raised, "
                                 "nothing was raised")
        if not issubclass(etype, Exception):
            return False  # time limits, KeyboardInterrupt: not ours to judge
        if issubclass(etype, self.exc_type):
            self.value = exc
            _record("raises", _names(self.exc_type))
            return True
        text = str(exc)
        text = text if len(text) <= _SHOWN else text[: _SHOWN - 4] + " ..."
        raise AssertionError(f"expected {_names(self.exc_type)} to be raised, got "
                             f"{etype.__name__}: {text}") from exc


def raises(exc_type, fn=None, *args, **kwargs):
    """`raises(ValueError, f, x)` calls f(x) and returns the exception it raised;
    `with raises(ValueError) as r:` checks the block (the exception is then `r.value`)."""
    ctx = _Raises(exc_type)
    if fn is None:
        return ctx
    with ctx:
        fn(*args, **kwargs)
    return ctx.value


def _cpu_s() -> float:
    return time.process_time()


@contextmanager
def time_limit(seconds: float):
    """The block must use at most `seconds` of CPU time (checked when it ends; the judge's own
    per-test limits stop a block that never ends)."""
    start = _cpu_s()
    yield
    used = _cpu_s() - start
    if used > seconds:
        raise TimeLimitExceeded(f"too slow: the block used {used:.2f}s of CPU time, "
                                f"its limit is {seconds:g}s")


def skip(reason: str):
    import pytest

    pytest.skip(reason)


def need_torch():
    """Skips the test where PyTorch is not installed; returns the torch module."""
    try:
        import torch
    except ImportError:
        skip("needs PyTorch, which is not installed here")
    return torch


def need_cuda():
    """Skips the test where no CUDA device is available; returns the torch module."""
    torch = need_torch()
    if not torch.cuda.is_available():
        skip("needs an NVIDIA GPU (CUDA), which is not available here")
    return torch
