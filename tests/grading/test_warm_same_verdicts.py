"""Issue 19: a warm grader's fork grades as a cold sandbox does. Every accepted and known-wrong
submission of every problem is graded on both paths, and both give the same verdict, the same
first failing test, the same kind of failure and the same message (grading folders' names,
which differ per grading anyway, aside).
"""

from __future__ import annotations

import re

import pytest

from judge.grading import warm_pool
from judge.grading.grader import grade
from judge.problem import ProblemBank
from judge.sandbox.forkserver import warm_possible

BANK = ProblemBank()
PROBLEMS = [p for p in BANK.list() if "cuda" not in p.requires]
TMP_PATH = re.compile(r"/(?:tmp|\.judge-warm)/[^\s'\"):]*")


def _essence(report) -> dict:
    d = report.to_dict()
    first = d.get("first_failure") or {}
    return {"verdict": d["verdict"], "test": first.get("test"), "kind": first.get("kind"),
            "message": TMP_PATH.sub("<path>", first.get("message") or ""),
            "verdicts": {t["name"]: t["verdict"] for t in d["tests"]}}


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_every_known_submission_grades_the_same_cold_and_warm(problem):
    ok, why = warm_possible()
    assert ok, why  # root and bubblewrap: CI and the judge machines
    files = problem.submissions("accepted") + problem.submissions("wrong_answer")
    assert files
    before = warm_pool.fallbacks()
    for path in files:
        source = path.read_text(encoding="utf-8")
        with warm_pool.forced(False):
            cold = grade(problem, source, device="cpu")
        with warm_pool.forced(True):
            warm = grade(problem, source, device="cpu")
        assert "grader_path" not in cold.provenance["sandbox_layers"], path.name
        assert warm.provenance["sandbox_layers"].get("grader_path") == "warm", path.name
        expected = "AC" if path.parent.name == "accepted" else "not AC"
        assert (str(cold.verdict) == "AC") == (expected == "AC"), (path.name, cold.verdict)
        assert _essence(warm) == _essence(cold), path.name
    assert warm_pool.fallbacks() == before
