"""Stand-in graders for the web platform's tests (injected with create_app(grader=...) or
`python -m web.cli serve --grader tests.e2e.fake_grader:grade`).

`grade` really grades the fixture problem: it runs every suite (public + hidden) against the
submission with the page's runner in a child process, compares with the reference's
observations, and answers a Report shaped like the grading core's. It has no sandbox: use it
only with the fixture problem's trusted code.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from web.expectations import record_reference, run_runner_child
from web.settings import Settings

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROBLEMS = FIXTURES / "problems"
REFERENCE = FIXTURES / "reference"


def fixture_settings(**kw) -> Settings:
    kw.setdefault("data_dir", Path(os.environ.get("KVP_TEST_DATA", "/tmp/kvp-fake-grader")))
    return Settings(problems_dir=PROBLEMS, reference_dir=REFERENCE, **kw)


def _all_tests(problem) -> dict:
    files = {}
    base = problem.folder / "tests"
    for p in sorted(base.rglob("*.py")):
        if "__pycache__" not in p.parts:
            files[p.relative_to(base).as_posix()] = p.read_text()
    return files


def grade(problem, source, on_event, step_delay_s: float = 0.05) -> dict:
    settings = fixture_settings()
    files = _all_tests(problem)
    t0 = time.perf_counter()
    expected = record_reference(problem, settings, files)
    ref_s = time.perf_counter() - t0
    res = run_runner_child({"module": problem.module, "source": source, "tests": files,
                            "handbook": problem.handbook_sources(settings.reference_dir),
                            "expected": expected}, timeout_s=60)
    tests = []
    for suite in ("public", "hidden"):
        rows = [t for t in res["tests"] if t["suite"] == suite]
        on_event({"type": "suite_started", "suite": suite, "tests": [t["name"] for t in rows]})
        for t in rows:
            on_event({"type": "test_started", "test": t["name"]})
            time.sleep(step_delay_s)
            failure = t["failure"]
            if suite == "hidden" and failure:
                failure = {"label": failure.get("label"), "message": None}
            tests.append({"name": t["name"], "suite": suite, "verdict": t["verdict"],
                          "time_s": t["time_s"], "weight": t.get("weight", 1),
                          "failure": failure})
            on_event({"type": "test_finished", "test": t["name"], "verdict": t["verdict"],
                      "time_s": t["time_s"]})
        on_event({"type": "suite_finished", "suite": suite})
    counted = [t for t in tests if t["verdict"] != "skipped"]
    first = next((t for t in counted if t["verdict"] != "AC"), None)
    verdict = res["verdict"] if res.get("compile_error") else (first["verdict"] if first else "AC")
    score = (sum(t["weight"] for t in counted if t["verdict"] == "AC")
             / max(1, sum(t["weight"] for t in counted)))
    report = {
        "schema_version": 1, "verdict": verdict, "score": round(score, 4),
        "problem": {"id": problem.id, "slug": problem.slug, "version": "fixture"},
        "submission": {}, "tests": tests,
        "first_failure": dict(first["failure"] or {}, test=first["name"],
                              verdict=first["verdict"]) if first else None,
        "compile_error": res.get("compile_error"),
        "timings": {"total_s": round(time.perf_counter() - t0, 3), "reference_s": round(ref_s, 3)},
        "provenance": {"device": "cpu", "grader": "tests/e2e/fake_grader.py"},
    }
    on_event({"type": "done", "verdict": verdict, "score": report["score"]})
    return report


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
