"""`judge import` on folders someone else wrote: the public file holds only what the examples
need, links and oversized folders are refused, `[handbook] modules` names only modules inside
the handbook folder, and `requires` is met by what the grading environment has. The fixtures
(tests/fixtures/handbook_more) are problems written for these tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from judge.authoring.handbook_format import Refused, read_problem
from judge.authoring.import_guard import MAX_FILE_BYTES, MAX_PROBLEM_FILES
from judge.authoring.test_split import split_tests
from judge.cli.main import main as judge_main
from judge.problem import ProblemError, load_problem

MORE = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_more"
BLOCKS = MORE / "serving" / "block-table"
NORMS = MORE / "numeric" / "row-norms"

pytestmark = pytest.mark.usefixtures("run_cache")


def _copy(src: Path, tmp_path: Path, book: str = "book") -> Path:
    dest = tmp_path / "hb" / book / src.name
    shutil.copytree(src, dest)
    return dest


# ---- the public file: the examples' closure, no more ---------------------------------------

def test_public_file_is_the_closure_of_the_examples():
    split = split_tests((BLOCKS / "test.py").read_text(encoding="utf-8"))
    assert split.examples == ["test_example_statement", "test_example_exact_fit"]
    # what the examples use, directly (_case, SIZES via _example_cases) or not, is public
    for name in ("def _case", "def _example_cases", "SIZES = ", "from solution import"):
        assert name in split.public
    # the reference, the model class and the table of expected values are answer keys
    for name in ("def ref", "class ModelPool", "EXPECTED_SWEEP", "import itertools",
                 "def test_sweep", "def test_model", "def test_bad_arguments"):
        assert name not in split.public, name
        assert name in split.hidden or name.startswith("def test_example"), name
    assert split.hidden_helpers == ["EXPECTED_SWEEP", "ModelPool", "ref"]
    assert "def test_example" not in split.hidden
    compile(split.public, "public", "exec")
    compile(split.hidden, "hidden", "exec")


def test_closure_follows_helpers_through_functions_classes_and_side_effects():
    source = '''
import random
from checker import check
random.seed(0)
BASE = 3
def _scale(x):
    return x * BASE
class Maker:
    def make(self):
        return _scale(2)
def _answer_key(x):
    return x * 3
TABLE = [_answer_key(i) for i in range(5)]
def test_example_one():
    ref = 1                 # a local named like a helper does not pull a helper in
    check(Maker().make(), 6 * ref)
def test_hidden():
    check(TABLE[1], 3)
if __name__ == "__main__":
    test_hidden()
'''
    split = split_tests(source)
    assert "class Maker" in split.public and "def _scale" in split.public
    assert "BASE = 3" in split.public and "random.seed(0)" in split.public
    assert "import random" in split.public  # random.seed needs it
    assert "_answer_key" not in split.public and "TABLE" not in split.public
    assert "__main__" not in split.public
    assert split.hidden_helpers == ["TABLE", "_answer_key"]


def test_without_examples_the_first_test_is_the_example():
    split = split_tests("from checker import check\n\ndef test_a():\n    check(1, 1)\n\n"
                        "def test_b():\n    check(2, 2)\n")
    assert (split.examples, split.others) == (["test_a"], ["test_b"])
    assert "def test_b" not in split.public


def test_import_names_the_helpers_kept_hidden(tmp_path, capsys):
    problems = tmp_path / "problems"
    assert judge_main(["import", str(BLOCKS), "--problems", str(problems), "--no-check"]) == 0
    out = capsys.readouterr().out
    assert "kept out of the public tests (only hidden tests use them): EXPECTED_SWEEP, " \
           "ModelPool, ref" in out
    p = load_problem(problems / "900-block-table")
    public = (p.suite_dir("public") / "test_examples.py").read_text(encoding="utf-8")
    assert "def ref" not in public and "ModelPool" not in public
    assert "def ref" in (p.suite_dir("hidden") / "test_hidden.py").read_text(encoding="utf-8")


# ---- requires: what the grading environment has --------------------------------------------

def test_requires_numpy_is_met_here_and_a_missing_package_is_refused(tmp_path):
    pytest.importorskip("numpy")
    assert read_problem(NORMS).requires == ["numpy"]
    folder = _copy(NORMS, tmp_path)
    md = folder / "problem.md"
    md.write_text(md.read_text(encoding="utf-8").replace("[numpy]", "[numpy, no_such_pkg_x]"),
                  encoding="utf-8")
    with pytest.raises(Refused, match="requires no_such_pkg_x, which the grading environment "
                                      "does not have"):
        read_problem(folder)


# ---- links and caps (issue 20, item 7) -----------------------------------------------------

@pytest.fixture
def secret(tmp_path) -> Path:
    """A file only its owner may read, standing in for /etc/shadow."""
    s = tmp_path / "outside" / "shadow"
    s.parent.mkdir()
    s.write_text("root:$6$secret-hash:19000:0:99999:7:::\n")
    os.chmod(s, 0o640)
    return s


def _bank_text(problems: Path) -> str:
    if not problems.exists():
        return ""
    return "".join(p.read_text(errors="replace") for p in problems.rglob("*") if p.is_file())


@pytest.mark.parametrize("link_name", ["helper_data.txt", "test.py", "tests_data/answers.json"])
def test_a_link_to_a_file_outside_is_refused(tmp_path, secret, capsys, link_name):
    folder = _copy(BLOCKS, tmp_path)
    target = folder / link_name
    if target.exists():
        target.unlink()
    target.parent.mkdir(exist_ok=True)
    target.symlink_to(secret)
    problems = tmp_path / "problems"
    assert judge_main(["import", str(tmp_path / "hb"), "--problems", str(problems),
                       "--no-check"]) == 1
    out = capsys.readouterr().out
    assert "is a symbolic link" in out and "links are not followed" in out
    assert "secret-hash" not in _bank_text(problems)


def test_a_link_to_another_problems_folder_is_not_followed(tmp_path, capsys):
    """A book whose 'problem' is a link to problem 143's folder (its reference, hidden tests)."""
    book = tmp_path / "hb" / "book"
    book.mkdir(parents=True)
    (book / "p143").symlink_to(load_problem("143").path, target_is_directory=True)
    shutil.copytree(BLOCKS, book / "block-table")
    problems = tmp_path / "problems"
    assert judge_main(["import", str(tmp_path / "hb"), "--problems", str(problems),
                       "--no-check"]) == 1
    out = capsys.readouterr().out
    assert "p143: a symbolic link; links are not followed" in out
    assert sorted(p.name for p in problems.iterdir()) == ["900-block-table"]
    hidden_143 = next(load_problem("143").suite_dir("hidden").glob("test_*.py"))
    assert hidden_143.read_text(encoding="utf-8")[:200] not in _bank_text(problems)
    # the problem folder itself given as a link
    with pytest.raises(Refused, match="is a symbolic link"):
        read_problem(book / "p143")


def test_caps_on_file_size_and_count(tmp_path):
    folder = _copy(BLOCKS, tmp_path)
    (folder / "big.txt").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(Refused, match="big.txt has .* bytes, more than"):
        read_problem(folder)
    (folder / "big.txt").unlink()
    data = folder / "data"
    data.mkdir()
    for i in range(MAX_PROBLEM_FILES):
        (data / f"{i}.txt").write_text("1")
    with pytest.raises(Refused, match=f"more than {MAX_PROBLEM_FILES} files"):
        read_problem(folder)


def test_a_fifo_is_refused(tmp_path):
    folder = _copy(BLOCKS, tmp_path)
    os.mkfifo(folder / "pipe.txt")  # reading it would block the import forever
    with pytest.raises(Refused, match="not a plain file"):
        read_problem(folder)


# ---- [handbook] modules (issue 20, item 8) -------------------------------------------------

def _imported(tmp_path) -> Path:
    problems = tmp_path / "problems"
    assert judge_main(["import", str(BLOCKS), "--problems", str(problems), "--no-check"]) == 0
    return problems / "900-block-table"


@pytest.mark.parametrize("name", ["../../../../main/reference/tiered", "../reference/tiered",
                                  "a/b", "checker.py", "", "class"])
def test_handbook_modules_are_identifiers(tmp_path, name):
    folder = _imported(tmp_path)
    toml = folder / "problem.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('modules = ["checker"]',
                                                            f'modules = ["checker", "{name}"]'))
    with pytest.raises(ProblemError, match="field `handbook.modules"):
        load_problem(folder)


def test_a_handbook_module_linked_from_elsewhere_is_not_mounted(tmp_path):
    folder = _imported(tmp_path)
    (tmp_path / "reference" / "tiered.py").symlink_to(load_problem("143").reference_path)
    toml = folder / "problem.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('modules = ["checker"]',
                                                            'modules = ["checker", "tiered"]'))
    p = load_problem(folder)
    with pytest.raises(ProblemError, match="'tiered' resolves outside"):
        p.handbook_paths
