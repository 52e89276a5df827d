"""Stand-in graders for the distributed tests, loaded by worker processes with
`--grader tests.distributed_graders:NAME`. They test the queue, not the grading.

- paced: $KVP_PACE_S seconds (default 0.2), then AC, or WA when the code contains "BUG" (or,
  with $KVP_STRICT=1, "EDGE": a problem whose tests got stricter, for regrades).
- hang: writes its pid to $KVP_HANG_MARKER, then never finishes (to be killed mid-job).
- pretend_gpu: the real grading core on CPU, reported as if it ran on a GPU; a test's verdict
  flips when the code contains "GPU_DIFFERS" (for `judge parity`).
"""

from __future__ import annotations

import os
import time


def _report(problem, verdict: str) -> dict:
    return {"schema_version": 1, "verdict": verdict, "score": 1.0 if verdict == "AC" else 0.0,
            "problem": {"id": problem.id, "slug": problem.slug, "version": "fixture"},
            "tests": [{"name": "public/test_a.py::test_x", "suite": "public",
                       "verdict": verdict, "time_s": 0.01, "weight": 1, "failure": None}],
            "first_failure": None, "compile_error": None, "timings": {},
            "provenance": {"device": "cpu", "pid": os.getpid()}}


def paced(problem, source, on_event) -> dict:
    on_event({"type": "suite_started", "suite": "public", "tests": ["public/test_a.py::test_x"]})
    time.sleep(float(os.environ.get("KVP_PACE_S", "0.2")))
    bad = "BUG" in source or (os.environ.get("KVP_STRICT") == "1" and "EDGE" in source)
    verdict = "WA" if bad else "AC"
    on_event({"type": "test_finished", "test": "public/test_a.py::test_x", "verdict": verdict,
              "time_s": 0.01})
    return _report(problem, verdict)


def hang(problem, source, on_event) -> dict:
    marker = os.environ.get("KVP_HANG_MARKER")
    if marker:
        with open(marker, "a") as fh:
            fh.write(f"{os.getpid()}\n")
    on_event({"type": "suite_started", "suite": "public", "tests": ["public/test_a.py::test_x"]})
    while True:
        time.sleep(60)


def pretend_gpu(problem, source, on_event) -> dict:
    from web.jobs.graders import judge_grader

    report = judge_grader(problem, source, on_event)
    report["provenance"].update(device="cuda", gpu_name="Pretend GPU (test)")
    if "GPU_DIFFERS" in source and report["tests"]:
        t = report["tests"][-1]
        t["verdict"] = "WA" if t["verdict"] == "AC" else "AC"
        report["verdict"] = "WA"
    return report
