"""Problem 143 end to end through grade(): the reference, the starter, a syntax error, a missing
import and the public suite alone. Every accepted and wrong_answer file (the verdict its header
names, caught by the tests it names) is checked by the bank's proof,
tests/authoring/test_bank_proves_itself.py, from the gradings tests/known_gradings.py makes once
per run: this module graded each of those files a second time (about 135 CPU seconds of the
suite's 4,000). The reference's outputs come from grade()'s default cache, the one the proof
fills (a module cache of its own ran the reference again). Skipped while
problems/143-tiered-kv-cache/ is not a complete problem yet."""

from pathlib import Path

import pytest

from judge import grade, load_problem
from judge.problem import ProblemError

FOLDER = Path(__file__).resolve().parents[2] / "problems" / "143-tiered-kv-cache"

try:
    PROBLEM = load_problem(FOLDER)
    PROBLEM.version  # the reference solution and handbook modules exist
except (ProblemError, OSError) as exc:  # not landed (yet)
    pytest.skip(f"problem 143 is not available: {exc}", allow_module_level=True)

pytestmark = pytest.mark.slow


def graded(source, **kw):
    report = grade(PROBLEM, source, **kw)
    assert report.ie_cause is None, report.ie_cause
    return report


def test_reference_is_accepted():
    report = graded(PROBLEM.reference_path.read_text())
    assert str(report.verdict) == "AC" and report.score == 1.0
    assert {t.suite for t in report.tests} == {"public", "hidden"}
    assert all(t.observations >= 1 for t in report.tests if str(t.verdict) != "SKIP")


def test_starter_fails():
    report = graded(PROBLEM.starter_source)
    assert str(report.verdict) not in ("AC", "CE", "IE")


def test_syntax_error_is_ce():
    report = graded(PROBLEM.starter_source + "\ndef broken(:\n    pass\n")
    assert str(report.verdict) == "CE" and report.compile_error["exc_type"] == "SyntaxError"


def test_missing_module_is_ce():
    source = PROBLEM.starter_source.rstrip("\n") + "\nimport module_that_does_not_exist_143\n"
    report = graded(source)
    assert str(report.verdict) == "CE"
    assert report.compile_error["exc_type"] == "ModuleNotFoundError"
    assert report.compile_error["line"] == source.count("\n")


def test_public_suite_alone_hides_nothing_it_should_show():
    report = graded(PROBLEM.starter_source, suite="public")
    d = report.to_dict()
    assert {t["suite"] for t in d["tests"]} == {"public"}
    ff = d["first_failure"]
    assert ff is not None and ff["test"].startswith("public/")
    if ff["kind"] == "observation":
        assert "expected" in ff and "got" in ff and ff["label"]
