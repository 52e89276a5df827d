"""How the web platform calls the grading core, and how tests swap it for a fake.

A grader is a callable `grader(problem: judge.Problem, source: str, on_event) -> dict` returning
the Report as JSON data (`report.to_dict()`); `on_event` receives the core's progress events.
"""

from __future__ import annotations

import importlib
from typing import Callable, Protocol

from judge.problem import Problem

EventSink = Callable[[dict], None]


class Grader(Protocol):
    def __call__(self, problem: Problem, source: str, on_event: EventSink) -> dict: ...


def judge_grader(problem: Problem, source: str, on_event: EventSink) -> dict:
    """The real thing: judge.grade() on the problem, every suite, the best device."""
    from judge import grade

    report = grade(problem, source, suite="all", device="auto", on_event=on_event)
    return report.to_dict() if hasattr(report, "to_dict") else dict(report)


class WarmGrader:
    """The grading core for a long-lived worker: one device, the reference stack kept warm.

    `warm(catalog)` imports torch once (and initialises CUDA on a GPU worker) and computes or
    loads the reference observations of every problem for this device, so the first student
    does not pay for them; the reference files are then kept in memory (re-read only when they
    change on disk). Each grading still runs the submission in a fresh sandboxed child.
    """

    def __init__(self, device: str = "auto"):
        from judge.environment import gpu_name, resolve_device
        from judge.reference_cache import ReferenceCache

        self.device = resolve_device(device)
        self.gpu_name = gpu_name() if self.device == "cuda" else None

        self.cache = ReferenceCache(in_memory=True)

    def warm(self, catalog, log=None) -> dict[str, str]:
        """Prepare every problem of `catalog`; {problem id: "ok" or why not}."""
        import time
        from judge.problem import SUITES
        from judge.reference_cache import get_reference

        t0 = time.perf_counter()
        import torch  # noqa: F401  (once, in this long-lived process)
        if self.device == "cuda":
            torch.cuda.init()
        out = {}
        for p in catalog.list():
            if "cuda" in p.requires and self.device != "cuda":
                out[p.id] = "needs a CUDA device"
                continue
            try:
                get_reference(p, list(SUITES), self.device,
                              cache=self.cache)
                out[p.id] = "ok"
            except Exception as exc:
                out[p.id] = f"{type(exc).__name__}: {exc}"
        if log is not None:
            log.info("reference stack warm on %s in %.1f s: %s", self.device,
                     time.perf_counter() - t0, out)
        return out

    def __call__(self, problem: Problem, source: str, on_event: EventSink) -> dict:
        from judge import grade

        report = grade(problem, source, suite="all",
                       device=self.device, on_event=on_event, cache=self.cache)
        return report.to_dict()


def load_grader(spec: str | None) -> Grader:
    """`None` -> the grading core; "package.module:function" -> that callable (tests, plug-ins)."""
    if not spec:
        return judge_grader
    module, _, attr = spec.partition(":")
    if not attr:
        raise ValueError(f"grader {spec!r}: expected 'module:function'")
    return getattr(importlib.import_module(module), attr)


def judge_available() -> tuple[bool, str]:
    """Whether `from judge import grade, load_problem` works here, and why not."""
    try:
        importlib.import_module("judge.grading")
        importlib.import_module("judge.problem")
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return True, ""
