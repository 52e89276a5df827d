"""The one problem model the web serves: `ProblemBank` over `judge.problem.Problem`."""

import shutil

import pytest
from paths import REPO

from judge.problem import ProblemBank, load_problem

FIXTURES = REPO / "tests" / "fixtures"


@pytest.fixture
def bank(tmp_path) -> ProblemBank:
    shutil.copytree(FIXTURES / "problems", tmp_path / "problems")
    shutil.copytree(FIXTURES / "reference", tmp_path / "reference")
    return ProblemBank(tmp_path / "problems")


@pytest.mark.parametrize("name", ["1", "001", "0001", "LRU-Cache", "001-lru-cache", " lru-cache "])
def test_a_problem_is_found_by_number_slug_or_folder(bank, name):
    assert bank.get(name).key == "001-lru-cache"


@pytest.mark.parametrize("name", ["2", "", "..", "/etc", str(FIXTURES / "problems" / "001-lru-cache")])
def test_a_bank_never_resolves_other_names_or_paths(bank, name):
    assert bank.get(name) is None


def test_the_bank_and_load_problem_agree_with_the_repository_bank():
    bank = ProblemBank(REPO / "problems")
    for p in bank.list():
        assert bank.get(p.id).version == load_problem(p.id).version
        assert bank.get("0" + p.id).key == p.key


def test_browser_is_off_unless_problem_toml_says_so(bank):
    toml = bank.root / "001-lru-cache" / "problem.toml"
    assert bank.get("1").browser is True
    toml.write_text(toml.read_text().replace("browser = true\n", ""))
    assert bank.get("1").browser is False and bank.get("1").summary()["browser"] is False
    assert bank.get("1").runs_on()[0] != "browser"


def test_an_invalid_folder_is_listed_as_an_error_not_a_problem(bank):
    broken = bank.root / "002-broken"
    broken.mkdir()
    (broken / "problem.toml").write_text('id = "2"\nslug = "broken"\n')
    assert [p.key for p in bank.list()] == ["001-lru-cache"]
    assert "002-broken" in bank.errors and "difficulty" in bank.errors["002-broken"]
    assert bank.get("2") is None


def test_what_the_page_gets(bank):
    p = bank.get("1")
    assert set(p.public_files()) == {f"public/{f.name}" for f in p.suite_dir("public").iterdir()
                                     if f.suffix == ".py"}
    handbook = p.handbook_sources()
    assert p.module not in handbook and p.reference_path.stem not in handbook
    assert set(handbook) == {"cache_stats"}
    assert p.languages() == ["en", "zh"] and p.statement("fr") == p.statement("en")
    assert p.summary()["title"] == p.titles


def test_the_version_changes_with_the_reference_solution(bank):
    """A worker compares its version with the server's: a changed reference must show."""
    before = bank.get("1").version
    ref = bank.get("1").reference_path
    ref.write_text(ref.read_text() + "\n# changed\n")
    assert bank.get("1").version != before


def test_a_handbook_folder_of_its_own(tmp_path, bank):
    shutil.copytree(bank.root.parent / "reference", tmp_path / "elsewhere")
    (tmp_path / "elsewhere" / "cache_stats.py").write_text("# another copy\n")
    moved = ProblemBank(bank.root, tmp_path / "elsewhere").get("1")
    assert moved.handbook_sources()["cache_stats"] == "# another copy\n"
    assert moved.version != bank.get("1").version
