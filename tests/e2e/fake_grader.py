"""Stand-in graders for the web platform's tests (injected with create_app(grader=...) or
`python -m web.cli serve --grader tests.e2e.fake_grader:slow`): they answer without running
anything; the real core grades everywhere else.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROBLEMS = FIXTURES / "problems"
REFERENCE = FIXTURES / "reference"


def quick(problem, source, on_event) -> dict:
    """AC unless the code contains 'BUG' (then WA): no child process, for API tests."""
    on_event({"type": "suite_started", "suite": "public", "tests": ["public/test_a.py::test_x"]})
    on_event({"type": "test_finished", "test": "public/test_a.py::test_x",
              "verdict": "WA" if "BUG" in source else "AC", "time_s": 0.01})
    verdict = "WA" if "BUG" in source else "AC"
    return {"schema_version": 1, "verdict": verdict, "score": 0.0 if verdict == "WA" else 1.0,
            "problem": {"id": problem.id, "slug": problem.slug, "version": "fixture"},
            "tests": [{"name": "public/test_a.py::test_x", "suite": "public", "verdict": verdict,
                       "time_s": 0.01, "weight": 1, "failure": None}],
            "first_failure": None, "compile_error": None, "timings": {}, "provenance": {}}


def slow(problem, source, on_event) -> dict:
    """Announces itself in $KVP_SLOW_MARKER, then takes $KVP_SLOW_S seconds (default 60)."""
    marker = os.environ.get("KVP_SLOW_MARKER")
    if marker:
        with open(marker, "a") as fh:
            fh.write(f"{os.getpid()}\n")
    on_event({"type": "suite_started", "suite": "public", "tests": ["public/test_a.py::test_x"]})
    time.sleep(float(os.environ.get("KVP_SLOW_S", "60")))
    return quick(problem, source, on_event)
