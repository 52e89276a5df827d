"""`judge check` proves a problem sound; `judge new` makes a folder it accepts once filled in."""

import shutil
from pathlib import Path

import pytest

from judge.authoring.check import check_problem, parse_header
from judge.authoring.scaffold import REFERENCE_EXAMPLE, new_problem
from judge.problem import ProblemError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("KVPRACTICE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def copy_bank(tmp_path) -> Path:
    shutil.copytree(FIXTURES / "problems", tmp_path / "problems")
    shutil.copytree(FIXTURES / "reference", tmp_path / "reference")
    return tmp_path / "problems" / "001-lru-cache"


def test_fixture_problem_passes_check():
    res = check_problem(FIXTURES / "problems" / "001-lru-cache")
    assert res.ok, (res.errors, [(s.label, s.problems) for s in res.submissions])
    rows = {r["submission"]: r for r in res.table()}
    assert set(rows) == {"reference", "starter", "accepted/linked_list.py",
                         "accepted/plain_dict.py", "wrong_answer/fifo.py",
                         "wrong_answer/no_refresh_on_put.py", "wrong_answer/crash_on_full.py"}
    assert rows["reference"]["verdict"] == "AC" and rows["starter"]["verdict"] != "AC"
    assert rows["wrong_answer/crash_on_full.py"]["verdict"] == "RE"
    assert set(rows["reference"]["tests"]) == set(res.tests) and len(res.tests) == 6


def test_check_fails_when_a_wrong_submission_gets_another_verdict(tmp_path):
    folder = copy_bank(tmp_path)
    fifo = folder / "submissions" / "wrong_answer" / "fifo.py"
    fifo.write_text(fifo.read_text().replace("# expect: WA", "# expect: RE"))
    res = check_problem(folder)
    assert not res.ok
    bad = [s for s in res.submissions if not s.ok]
    assert [s.label for s in bad] == ["wrong_answer/fifo.py"]
    assert bad[0].problems == ["expected RE, got WA"]


def test_check_fails_when_caught_by_names_a_passing_test(tmp_path):
    folder = copy_bank(tmp_path)
    sub = folder / "submissions" / "wrong_answer" / "no_refresh_on_put.py"
    sub.write_text(sub.read_text().replace("test_update_refreshes", "test_stats"))
    res = check_problem(folder)
    assert not res.ok
    assert any("caught-by hidden/test_hidden.py::test_stats passed" in p
               for s in res.submissions for p in s.problems)


def test_check_fails_on_an_accepted_starter_and_a_silent_test(tmp_path):
    folder = copy_bank(tmp_path)
    shutil.copy(folder.parent.parent / "reference" / "lru.py", folder / "starter" / "lru.py")
    with open(folder / "tests" / "hidden" / "test_hidden.py", "a") as f:
        f.write("\n\ndef test_silent(observe):\n    assert LRUCache(1).keys() == []\n")
    res = check_problem(folder)
    assert not res.ok
    assert any("records no observation" in e for e in res.errors)
    starter = [s for s in res.submissions if s.label == "starter"][0]
    assert starter.problems == ["the starter is accepted: it must fail"]


def test_check_reports_schema_and_statement_problems(tmp_path):
    folder = copy_bank(tmp_path)
    (folder / "statement.zh.md").unlink()
    toml = folder / "problem.toml"
    toml.write_text(toml.read_text().replace('"hidden/test_hidden.py::test_random_ops" = 2',
                                             '"hidden/test_hidden.py::test_gone" = 2'))
    res = check_problem(folder)
    assert not res.ok and not res.submissions
    assert any("statement" in e and "zh" in e for e in res.errors)
    assert any("weights" in e and "test_gone" in e for e in res.errors)
    toml.write_text("id = 1\n")
    res = check_problem(folder)
    assert not res.ok and "problem.toml" in res.errors[0]


def test_wrong_submission_header():
    assert parse_header("# expect: wa\n# caught-by: a.py::t1, b.py::t2\n# caught-by: c\nx=1") == (
        "WA", ["a.py::t1", "b.py::t2", "c"])
    assert parse_header("x = 1\n# expect: WA\n") == (None, [])


def test_new_problem_scaffold_passes_check_once_filled_in(tmp_path):
    root = tmp_path / "problems"
    folder = new_problem("7", "running-sum", root)
    assert folder == root / "007-running-sum"
    reference = tmp_path / "reference" / "running_sum.py"
    assert reference.is_file()
    res = check_problem(folder)
    assert not res.ok  # the reference is still a stub
    reference.write_text(REFERENCE_EXAMPLE)
    res = check_problem(folder)
    assert res.ok, (res.errors, [(s.label, s.problems) for s in res.submissions])
    assert [s.verdict for s in res.submissions] == ["AC", "RE", "WA"]
    with pytest.raises(ProblemError):
        new_problem("7", "other", root)
    with pytest.raises(ProblemError):
        new_problem("8", "Bad Slug", root)
