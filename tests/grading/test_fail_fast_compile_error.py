"""A submission lacking a name the tests import is CE whether or not grading stops at the first
failure (`stop_at_first_failure=True`, the mode `judge check --mutate` grades mutants in). The
fail-fast run names its tests by node id; pytest cannot find node ids in a file that did not
collect and exits with its usage-error status, which was read as the runner's own fault (IE)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge import grade
from judge.authoring.importer import import_problems
from judge.problem import load_problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

pytestmark = pytest.mark.usefixtures("run_cache")


def _both_modes(problem, source: str, missing: str) -> None:
    for fail_fast in (False, True):
        d = grade(problem, source, stop_at_first_failure=fail_fast).to_dict()
        assert d["verdict"] == "CE", (fail_fast, d["verdict"], d.get("internal_error"),
                                      d.get("compile_error"))
        assert missing in d["compile_error"]["message"], (fail_fast, d["compile_error"])
        assert d["score"] == 0


def test_native_problem_missing_class_is_ce_in_both_modes():
    p = load_problem(FIXTURES / "problems" / "001-lru-cache")
    # imports fine, but the tests' `from lru import LRUCache` fails at collection
    _both_modes(p, "class OtherCache:\n    pass\n", "LRUCache")


def test_imported_problem_missing_name_is_ce_in_both_modes(tmp_path):
    res = import_problems([FIXTURES / "handbook_graded" / "book" / "tiny-lru"],
                          tmp_path / "problems")
    assert not res.refused, res.refused
    p = load_problem(res.imported[0].folder)
    solution = (FIXTURES / "handbook_graded" / "book" / "tiny-lru" / "solution.py").read_text()
    assert "class CapacityError" in solution
    # the tests import CapacityError and TinyLRU; this one defines only TinyLRU
    without = solution.replace("class CapacityError", "class _Gone")
    without = without.replace("CapacityError", "ValueError")
    _both_modes(p, without, "CapacityError")
