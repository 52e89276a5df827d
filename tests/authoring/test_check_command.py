"""`judge check` proves a problem sound; `judge new` makes a folder it accepts once filled in;
an imported problem whose reference passes by chance is reported flaky, not proved."""

import contextlib
import hashlib
import io
import shutil
from pathlib import Path

import pytest

from judge.authoring.check import SubmissionCheck, check_problem, parse_header
from judge.authoring.importer import import_problems
from judge.authoring.scaffold import REFERENCE_EXAMPLE, new_problem
from judge.cli.console import Console, print_check
from judge.cli.main import main as judge_main
from judge.grading.grader import grade
from judge.problem import ProblemError, load_problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# first-max: its solution is wrong on ties and its 10 hidden tests draw a pair of 0/1 values from
# an unseeded `random`: each passes one run in two, so 3 runs agree on all 10 with p = 4^-10
FLAKY_BOOK = FIXTURES / "handbook_flaky" / "book"

pytestmark = pytest.mark.usefixtures("run_cache")


_graded: dict[tuple[str, str], object] = {}


def _grading_inputs(problem) -> str:
    """sha256 over the problem's files that a grading reads: all of version's but its known
    submissions (a header's `expect`/`caught-by` is the check's business, not the grading's)."""
    h = hashlib.sha256()
    for label, path in problem._hashed_files():
        if not label.startswith("problem/submissions/"):
            h.update(label.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def known(problem, path: Path):
    """check_problem's `graded`: a file graded as the check grades it (device auto, hidden
    details shown), once per module for the same text on the same tests: the copies of the
    fixture problem below each change one file, and the check grades every other file of
    theirs as the first test's check did."""
    key = (_grading_inputs(problem), path.read_text(encoding="utf-8"))
    if key not in _graded:
        _graded[key] = grade(problem, key[1], device="auto", reveal_hidden=True)
    return _graded[key]


def copy_bank(tmp_path) -> Path:
    shutil.copytree(FIXTURES / "problems", tmp_path / "problems")
    shutil.copytree(FIXTURES / "reference", tmp_path / "reference")
    return tmp_path / "problems" / "001-lru-cache"


def test_fixture_problem_passes_check():
    res = check_problem(FIXTURES / "problems" / "001-lru-cache", graded=known)
    assert res.ok, (res.errors, [(s.label, s.problems) for s in res.submissions])
    rows = {r["submission"]: r for r in res.table()}
    assert set(rows) == {"reference", "starter", "accepted/linked_list.py",
                         "accepted/plain_dict.py", "wrong_answer/fifo.py",
                         "wrong_answer/no_refresh_on_put.py", "wrong_answer/crash_on_full.py"}
    assert rows["reference"]["verdict"] == "AC" and rows["starter"]["verdict"] != "AC"
    assert rows["wrong_answer/crash_on_full.py"]["verdict"] == "RE"
    # a native reference is graded once: its observations are the cached truth
    assert rows["reference"]["runs"] == [] and res.flaky == {}
    assert set(rows["reference"]["tests"]) == set(res.tests) and len(res.tests) == 6


def test_check_fails_when_a_wrong_submission_gets_another_verdict(tmp_path):
    folder = copy_bank(tmp_path)
    fifo = folder / "submissions" / "wrong_answer" / "fifo.py"
    fifo.write_text(fifo.read_text().replace("# expect: WA", "# expect: RE"))
    res = check_problem(folder, graded=known)
    assert not res.ok
    bad = [s for s in res.submissions if not s.ok]
    assert [s.label for s in bad] == ["wrong_answer/fifo.py"]
    assert bad[0].problems == ["expected RE, got WA"]


def test_check_fails_when_caught_by_names_a_passing_test(tmp_path):
    folder = copy_bank(tmp_path)
    sub = folder / "submissions" / "wrong_answer" / "no_refresh_on_put.py"
    sub.write_text(sub.read_text().replace("test_update_refreshes", "test_stats"))
    res = check_problem(folder, graded=known)
    assert not res.ok
    assert any("caught-by hidden/test_hidden.py::test_stats passed" in p
               for s in res.submissions for p in s.problems)


def test_check_fails_on_an_accepted_starter_and_a_silent_test(tmp_path):
    folder = copy_bank(tmp_path)
    shutil.copy(folder.parent.parent / "reference" / "lru.py", folder / "starter" / "lru.py")
    with open(folder / "tests" / "hidden" / "test_hidden.py", "a") as f:
        f.write("\n\ndef test_silent(observe):\n    assert LRUCache(1).keys() == []\n")
    res = check_problem(folder, graded=known)
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


# ---- a reference that passes by chance (an imported problem's) ----------------------------

@pytest.fixture(scope="module")
def first_max(tmp_path_factory):
    res = import_problems([FLAKY_BOOK], tmp_path_factory.mktemp("flaky") / "problems")
    assert not res.refused, res.refused
    return load_problem(str(res.imported[0].folder))


@pytest.fixture(scope="module")
def flaky_import(tmp_path_factory):
    """`judge import` of the flaky book, made once: (its exit code, what it printed, the check it
    made of first-max). test_judge_import_says_flaky reads what it printed and
    test_a_flaky_reference_is_reported_flaky_not_proved the check itself: a check of its own
    there was the same proof (3 runs of the same reference) made a second time."""
    import judge.authoring.check as check

    made = []

    def recording(*args, **kw):
        made.append(check_problem(*args, **kw))
        return made[-1]
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setattr(check, "check_problem", recording)
        code = judge_main(["import", str(FLAKY_BOOK), "--problems",
                           str(tmp_path_factory.mktemp("flaky-cli") / "problems")])
    assert len(made) == 1, made
    return code, out.getvalue(), made[0]


def test_flaky_is_the_tests_whose_outcome_differs_across_runs():
    c = SubmissionCheck("reference", Path("solution.py"), "AC")
    same = {"public/a.py::t": "passed", "hidden/b.py::u": "failed"}
    c.runs = [dict(same), dict(same), dict(same)]
    assert c.flaky == {}  # wrong every time is not flaky: it is wrong
    c.runs[1] = {"public/a.py::t": "passed", "hidden/b.py::u": "passed"}
    c.runs[2] = {"public/a.py::t": "passed"}
    assert c.flaky == {"hidden/b.py::u": ["failed", "passed", "not run"]}
    c.runs = c.runs[:1]
    assert c.flaky == {}  # one run has nothing to differ from


def test_a_flaky_reference_is_reported_flaky_not_proved(flaky_import):
    res = flaky_import[2]  # the check `judge import` made (its device: auto)
    assert not res.ok
    ref = res.submissions[0]
    assert [s.label for s in res.submissions] == ["reference"]  # the rest would be luck too
    assert len(ref.runs) == 3 and set(ref.runs[0]) == set(res.tests)
    assert res.flaky and set(res.flaky) <= {t for t in res.tests if "random_pair" in t}
    assert all(len(set(o)) == 2 and set(o) == {"passed", "failed"} for o in res.flaky.values())
    assert ref.problems == [p for p in ref.problems if p.startswith("flaky: ")] and ref.problems
    assert "public/test_examples.py::test_example" not in res.flaky  # no tie: always passes
    assert res.table()[0]["flaky"] == res.flaky
    for lang, words in (("en", ["the reference is flaky: 3 runs gave", "900-first-max: FLAKY"]),
                        ("zh", ["参考解不稳定：3 次运行的结果为", "900-first-max：参考解不稳定"])):
        out = io.StringIO()
        print_check(Console(lang, out, color=False), res)
        text = out.getvalue()
        assert all(w in text for w in words), text
        differed = next(iter(res.flaky))
        assert f"    {differed}: {', '.join(res.flaky[differed])}" in text
        assert "flaky: its tests' outcomes" not in text  # said once, in the reader's words


def test_one_reference_run_is_the_grading_alone(first_max):
    """--reference-runs 1, what `judge check` did before: the one grading's luck is its verdict
    (here almost always IE, the reference cache's own run failing), never reported flaky."""
    res = check_problem(first_max, device="cpu", reference_runs=1)
    ref = res.submissions[0]
    assert ref.runs == [] and res.flaky == {}
    assert not any(p.startswith("flaky: ") for p in ref.problems)


def test_judge_import_says_flaky(flaky_import):
    code, out, _ = flaky_import
    assert code == 1
    assert "flaky       900 book/first-max" in out
    assert "reference: flaky: its tests' outcomes differ across 3 runs" in out
    assert "0 of 1 imported problems prove themselves; 1 flaky" in out
    with pytest.raises(SystemExit) as e:
        judge_main(["check", "--reference-runs", "0"])
    assert e.value.code == 2
