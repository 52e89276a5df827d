"""How the web platform calls the grading core, and how tests swap it for a fake.

A grader is a callable `grader(problem: judge.Problem, source: str, on_event) -> dict` returning
the Report as JSON data (`report.to_dict()`); `on_event` receives the core's progress events.
"""

from __future__ import annotations

import importlib
import threading
from typing import Callable, Protocol

from judge.problem import Problem

EventSink = Callable[[dict], None]


class Grader(Protocol):
    def __call__(self, problem: Problem, source: str, on_event: EventSink) -> dict: ...


_caches: dict = {}
_caches_lock = threading.Lock()


def _reference_cache():
    """This process's reference cache (per cache folder: a test may point the judge at
    another), keeping what it read: a grading otherwise read and parsed the reference's file
    again and hashed the runner's sources (2 ms idle, 20-60 ms measured on a loaded box; the
    cache reads the file again when it changes)."""
    from judge.grading.reference_cache import ReferenceCache, cache_root

    root = cache_root()
    with _caches_lock:
        if root not in _caches:
            _caches[root] = ReferenceCache(root / "judge" / "reference", in_memory=True)
        return _caches[root]


def judge_grader(problem: Problem, source: str, on_event: EventSink) -> dict:
    """The real thing: judge.grade() on the problem, every suite, the best device."""
    from judge import grade

    report = grade(problem, source, suite="all", device="auto", on_event=on_event,
                   cache=_reference_cache())
    return report.to_dict() if hasattr(report, "to_dict") else dict(report)


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
        importlib.import_module("judge.grading.grader")
        importlib.import_module("judge.problem")
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"
    return True, ""
