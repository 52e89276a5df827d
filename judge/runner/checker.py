"""The handbook's test helpers (`from checker import ...` in an imported problem's tests), with
the handbook's signatures and behaviour (its practice/runtime/checker.py), written here:

    check(actual, expected, what="结果")                     equal; arrays element-wise, same shape
    check_close(actual, expected, rtol=1e-5, atol=1e-6, what="结果")
    with raises(ExcType, what="这个调用"): ...                the block raises ExcType
    with time_limit(seconds, what="这段代码"): ...            the block takes at most `seconds`
    Skip, skip(reason), torch_device(), need_torch(), need_cuda(), IN_BROWSER, SPEED_FACTOR

A failure is an AssertionError worded as the handbook words it (what, 期望 expected, 实际 got,
where). Two additions the handbook lacks, for tests written before: `raises(Exc, fn, *args)` calls
`fn` itself, and `msg=` is another name for `what=`.

Nothing here reports to the judge: for an imported problem these run in the trusted test process,
apart from the submission (judge_runner.proxy.trusted), and the test's own outcome is the verdict. There
`time_limit` measures the CPU time of the submission's processes, as the grader outside both
sandboxes measures it; elsewhere the CPU time of this process.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time

__all__ = ["check", "check_close", "raises", "time_limit", "Skip", "skip", "torch_device",
           "need_torch", "need_cuda", "IN_BROWSER", "SPEED_FACTOR", "TimeLimitExceeded"]

IN_BROWSER = sys.platform == "emscripten"
SPEED_FACTOR = 3.0 if IN_BROWSER else 1.0  # WebAssembly is slower than a local interpreter
_SHOWN = 400


class Skip(Exception):
    """This environment cannot run the test (no GPU, no PyTorch): the test is skipped."""


class TimeLimitExceeded(AssertionError):
    """The body of `time_limit` took longer than allowed."""


def skip(reason: str):
    raise Skip(reason)


def _is_array(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, (int, float, complex))


def _s(x, limit: int = _SHOWN) -> str:
    try:
        text = repr(x)
    except Exception:
        text = f"<{type(x).__name__}>"
    if _is_array(x) and getattr(x, "size", 0) > 16:
        text = f"<{type(x).__name__} shape={tuple(x.shape)} dtype={x.dtype}>\n{text}"
    return text if len(text) <= limit else text[:limit] + " …"


def _to_numpy(x):
    if hasattr(x, "detach") and hasattr(x, "dtype"):  # a torch tensor, maybe on a GPU
        x = x.detach()
        if str(x.dtype) == "torch.bfloat16":  # numpy has no bfloat16
            x = x.float()
        return x.cpu().numpy()
    return x


def _where(actual, expected, path: str = "") -> str | None:
    """Where inside nested lists, tuples and dicts the first difference is ("[2][0]")."""
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        for i, (a, e) in enumerate(zip(actual, expected)):
            if not _equal(a, e):
                return _where(a, e, f"{path}[{i}]")
        return path if len(actual) != len(expected) else None
    if isinstance(actual, dict) and isinstance(expected, dict):
        for k in expected:
            if k not in actual or not _equal(actual[k], expected[k]):
                return _where(actual.get(k), expected[k], f"{path}[{k!r}]") \
                    if k in actual else f"{path}[{k!r}]"
        return path or None
    return path or None


def _equal(a, e) -> bool:
    try:
        return bool(a == e)
    except Exception:
        return False


def _describe(what, actual, expected) -> str:
    where = _where(actual, expected)
    head = f"{what}（第一个不同在 {where}）" if where else what
    return f"{head}\n  期望：{_s(expected)}\n  实际：{_s(actual)}"


def check(actual, expected, what: str = "结果", *, msg: str | None = None) -> None:
    """Exactly equal (arrays element by element, and of the same shape)."""
    what = msg if msg is not None else what
    actual, expected = _to_numpy(actual), _to_numpy(expected)
    if _is_array(actual) or _is_array(expected):
        import numpy as np

        a, e = np.asarray(actual), np.asarray(expected)
        if a.shape != e.shape:
            raise AssertionError(f"{what}：形状不对，期望 {e.shape}，实际 {a.shape}")
        if not np.array_equal(a, e):
            bad = np.argwhere(a != e)
            i = tuple(int(v) for v in bad[0]) if len(bad) else ()
            raise AssertionError(f"{what}：有 {len(bad)} 个元素不对，第一个在下标 {i}："
                                 f"期望 {e[i]!r}，实际 {a[i]!r}\n"
                                 f"  期望：{_s(e)}\n  实际：{_s(a)}")
        return
    try:
        differ = bool(actual != expected)
    except Exception:
        differ = True
    if differ:
        raise AssertionError(_describe(what, actual, expected))


def check_close(actual, expected, rtol: float = 1e-5, atol: float = 1e-6, what: str = "结果",
                *, msg: str | None = None) -> None:
    """Close: |actual - expected| <= atol + rtol * |expected|; lists and tuples are arrays."""
    what = msg if msg is not None else what
    actual, expected = _to_numpy(actual), _to_numpy(expected)
    if _is_array(actual) or _is_array(expected) or isinstance(actual, (list, tuple)):
        import numpy as np

        try:
            a = np.asarray(actual, dtype=np.float64)
            e = np.asarray(expected, dtype=np.float64)
        except (TypeError, ValueError):
            raise AssertionError(f"{what}：不是数值数组\n  期望：{_s(expected)}\n"
                                 f"  实际：{_s(actual)}") from None
        if a.shape != e.shape:
            raise AssertionError(f"{what}：形状不对，期望 {e.shape}，实际 {a.shape}")
        if np.isnan(a).any() and not np.isnan(e).any():
            i = tuple(int(v) for v in np.argwhere(np.isnan(a))[0])
            raise AssertionError(f"{what}：出现了 NaN，第一个在下标 {i}")
        diff = np.abs(a - e)
        bad = ~(diff <= atol + rtol * np.abs(e))
        bad &= ~(np.isnan(a) & np.isnan(e))
        if bad.any():
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            raise AssertionError(f"{what}：误差太大，{int(bad.sum())} 个元素超出容差，最大误差 "
                                 f"{np.nanmax(diff):.3g}；下标 {i} 处期望 {e[i]:.6g}，实际 "
                                 f"{a[i]:.6g}（容差 rtol={rtol}, atol={atol}）")
        return
    try:
        ok = math.isclose(float(actual), float(expected), rel_tol=rtol, abs_tol=atol)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise AssertionError(f"{what}：期望 {expected!r}，实际 {_s(actual)}"
                             f"（容差 rtol={rtol}, atol={atol}）")


def _names(exc_type) -> str:
    types = exc_type if isinstance(exc_type, tuple) else (exc_type,)
    return " 或 ".join(getattr(t, "__name__", str(t)) for t in types)


class _Raises(contextlib.AbstractContextManager):
    def __init__(self, exc_type, what):
        self.exc_type, self.what, self.value = exc_type, what, None

    def __exit__(self, etype, exc, tb):
        if etype is None:
            raise AssertionError(f"{self.what}：应该抛出 {_names(self.exc_type)}，"
                                 "但没有抛出任何异常")
        if not issubclass(etype, Exception):
            return False  # time limits, KeyboardInterrupt: not ours to judge
        if issubclass(etype, self.exc_type):
            self.value = exc
            return True
        raise AssertionError(f"{self.what}：应该抛出 {_names(self.exc_type)}，实际抛出了 "
                             f"{etype.__name__}: {_s(str(exc))}") from None


def raises(exc_type, what="这个调用", *args, **kwargs):
    """`with raises(ValueError, "空列表"):` checks the block; `raises(ValueError, f, x)` calls
    f(x) and returns the exception."""
    if callable(what) and not isinstance(what, str):
        ctx = _Raises(exc_type, "这个调用")
        with ctx:
            what(*args, **kwargs)
        return ctx.value
    return _Raises(exc_type, what)


def _trusted():
    for name in ("judge_runner.proxy.trusted", "judge.runner.proxy.trusted"):
        mod = sys.modules.get(name)
        if mod is not None and mod.active():
            return mod
    return None


@contextlib.contextmanager
def time_limit(seconds: float, what: str = "这段代码"):
    """The block must finish within `seconds` (times SPEED_FACTOR in the browser): CPU seconds of
    the submission (see the module doc)."""
    limit = seconds * SPEED_FACTOR
    link = _trusted()
    if link is not None:
        per_call = link.overhead_per_call()
        cpu0, calls0 = link.submission_cpu(), link.calls()
        yield
        calls = link.calls() - calls0 + 1  # the measurement's own request
        cpu = link.submission_cpu() - cpu0
        used = max(0.0, cpu - calls * per_call)
        if used > limit:  # measured again, as long a run as the block's, before it fails
            per_call = max(per_call, link.overhead_now(calls))
            used = max(0.0, cpu - calls * per_call)
    else:
        start = time.process_time()
        yield
        used = time.process_time() - start
    if used > limit:
        raise TimeLimitExceeded(f"{what}：用了 {used:.2f} 秒，超过限制 {limit:.2f} 秒："
                                "算法的复杂度可能太高")


def torch_device() -> str:
    """cuda where an NVIDIA GPU is there, else mps (Apple Silicon), else cpu; skips the test
    where PyTorch is not installed."""
    try:
        import torch
    except ImportError:
        skip("这道题需要 PyTorch：请在本地环境运行")
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def need_torch() -> str:
    """Skips in the browser (no PyTorch there); returns the device string."""
    if IN_BROWSER:
        skip("浏览器里没有 PyTorch：请在本地运行")
    return torch_device()


def need_cuda() -> str:
    dev = need_torch()
    if dev != "cuda":
        skip("这个用例需要 NVIDIA GPU（例如 WSL2 + CUDA），当前设备是 " + dev)
    return dev
