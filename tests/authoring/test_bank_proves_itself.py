"""`judge check` of the whole bank, inside the test session: every problem proves itself (the
reference AC, the starter not, each accepted file AC, each known-wrong file the verdict its
header names, caught by the tests it names, meeting a hint). The known files' gradings are the
warm ones (the path `judge check` takes) that tests/known_gradings.py makes once per session
for the warm and shard tests, so the bank is not graded a second time to be checked (`make
test` ran `judge check` after pytest, grading every file again: about 2 minutes on 2 busy
cores)."""

from __future__ import annotations

import pytest
from known_gradings import graded, known_files

from judge.authoring.check import check_problem
from judge.grading import warm_pool
from judge.problem import ProblemBank

BANK = ProblemBank()
PROBLEMS = [p for p in BANK.list() if "cuda" not in p.requires]


def _known(problem, path):
    files = {str(f) for f in known_files(problem)}
    return graded(problem, path, "warm").report if str(path) in files else None


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_every_problem_of_the_bank_proves_itself(problem):
    with warm_pool.forced(True):  # the reference and the starter warm, as `judge check` grades
        res = check_problem(problem, device="cpu", graded=_known)
    assert res.errors == [], res.errors
    bad = [(s.label, s.verdict, s.problems) for s in res.submissions if not s.ok]
    assert bad == []
    labels = {s.label for s in res.submissions}
    assert {"reference", "starter"} <= labels and len(labels) == 2 + len(known_files(problem))
