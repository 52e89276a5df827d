"""Issue 19: a warm grader's fork grades as a cold sandbox does. Every accepted and known-wrong
submission of every problem is graded on both paths, and both give the same verdict, the same
first failing test, the same kind of failure and the same message (grading folders' names,
which differ per grading anyway, aside). The warm path is graded both unsharded and as 2 shards
(what JUDGE_SHARDS=auto gives on a 2-core host; that one for known_gradings.sharded_files, the
accepted files and every third wrong one); tests/known_gradings.py grades each file once
per session on each path, test_hidden_shards.py comparing the two warm ones with each other.
"""

from __future__ import annotations

import re

import pytest
from known_gradings import graded, known_files, sharded_files

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
    files, sharded = known_files(problem), set(sharded_files(problem))
    assert files
    for path in files:
        cold = graded(problem, path, "cold")
        assert "grader_path" not in cold.report.provenance["sandbox_layers"], path.name
        expected = "AC" if path.parent.name == "accepted" else "not AC"
        assert (str(cold.report.verdict) == "AC") == (expected == "AC"), (path.name,
                                                                         cold.report.verdict)
        for how in ("warm", "sharded") if path in sharded else ("warm",):
            warm = graded(problem, path, how)
            assert warm.report.provenance["sandbox_layers"].get("grader_path") == "warm", \
                (path.name, how)
            assert warm.fallbacks == 0, (path.name, how)
            assert _essence(warm.report) == _essence(cold.report), (path.name, how)
