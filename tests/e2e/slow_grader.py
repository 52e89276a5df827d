"""A stand-in grader for the page's browser tests (`--grader e2e.slow_grader:grade`): no child
process, AC unless the code contains "BUG" (then WA, score 0); code containing "SLOW" takes
$KVP_SLOW_GRADE_S seconds (default 6) between its tests, so a test can stop the server while it
grades."""

from __future__ import annotations

import os
import time

TESTS = ["public/test_page.py::test_first", "hidden/test_page.py::test_second"]


def grade(problem, source, on_event) -> dict:
    wrong = "BUG" in source
    pause = float(os.environ.get("KVP_SLOW_GRADE_S", "6")) if "SLOW" in source else 0.0
    rows = []
    for name in TESTS:
        suite = name.split("/", 1)[0]
        on_event({"type": "suite_started", "suite": suite, "tests": [name]})
        on_event({"type": "test_started", "test": name})
        time.sleep(pause / len(TESTS))
        verdict = "WA" if wrong and suite == "hidden" else "AC"
        on_event({"type": "test_finished", "test": name, "verdict": verdict, "time_s": 0.01})
        rows.append({"name": name, "suite": suite, "verdict": verdict, "time_s": 0.01,
                     "weight": 1, "failure": None})
    verdict = "WA" if wrong else "AC"
    return {"schema_version": 1, "verdict": verdict, "score": 0.0 if wrong else 1.0,
            "problem": {"id": problem.id, "slug": problem.slug, "version": "page-test"},
            "tests": rows, "first_failure": None, "compile_error": None, "timings": {},
            "provenance": {}}
