"""Issue 19: a warm grader's fork grades as a cold sandbox does. The first accepted and a sixth of
the known-wrong submissions of every problem (known_gradings.compared_files) are graded on both
paths, and both give the same verdict, the same first failing test, the same kind of failure
and the same message (grading folders' names, which differ per grading anyway, aside). The warm
path is graded both unsharded and as 2 shards (what JUDGE_SHARDS=auto gives on a 2-core host);
every known file's warm grading, the one `judge check` makes and the bank's proof reads, is
warm and gives AC exactly for the accepted files. tests/known_gradings.py grades each file once
per session on each path, test_hidden_shards.py comparing the two warm ones with each other.
"""

from __future__ import annotations

import re

import pytest
from known_gradings import compared_files, graded, known_files

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
    files, compared = known_files(problem), compared_files(problem)
    assert files and compared
    for path in files:
        warm = graded(problem, path, "warm")
        assert warm.report.provenance["sandbox_layers"].get("grader_path") == "warm", path.name
        assert warm.fallbacks == 0, path.name
        accepted = path.parent.name == "accepted"
        assert (str(warm.report.verdict) == "AC") == accepted, (path.name, warm.report.verdict)
    for path in compared:
        cold = graded(problem, path, "cold")
        assert "grader_path" not in cold.report.provenance["sandbox_layers"], path.name
        for how in ("warm", "sharded"):
            warm = graded(problem, path, how)
            assert warm.report.provenance["sandbox_layers"].get("grader_path") == "warm", \
                (path.name, how)
            assert warm.fallbacks == 0, (path.name, how)
            assert _essence(warm.report) == _essence(cold.report), (path.name, how)
