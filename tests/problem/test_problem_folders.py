"""Problem folders: problem.toml validation, finding problems, test discovery, the version."""

import shutil
from pathlib import Path

import pytest

from judge.problem import ProblemError, discover_file, list_problems, load_problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BANK = FIXTURES / "problems"
LRU = BANK / "001-lru-cache"


def copy_bank(tmp_path) -> Path:
    shutil.copytree(BANK, tmp_path / "problems")
    shutil.copytree(FIXTURES / "reference", tmp_path / "reference")
    return tmp_path / "problems"


@pytest.mark.parametrize("name", ["1", "001", "lru-cache", "001-lru-cache"])
def test_load_problem_by_number_slug_or_folder_name(name):
    p = load_problem(name, BANK)
    assert (p.id, p.slug, p.number, p.module) == ("001", "lru-cache", 1, "lru")


def test_load_problem_by_path_and_its_files():
    p = load_problem(LRU)
    assert p.path == LRU.resolve()
    assert p.titles == {"en": "An LRU cache", "zh": "LRU 缓存"}
    assert p.title("zh") == "LRU 缓存" and p.difficulty == "easy"
    assert p.statement("zh").startswith("# LRU 缓存")
    assert p.statement("fr") == p.statement("en")
    assert "class LRUCache" in p.starter_source
    assert p.reference_path == (FIXTURES / "reference" / "lru.py").resolve()
    assert [h.name for h in p.handbook_paths] == ["cache_stats.py"]
    assert p.runs_on() == ["browser", "cpu", "gpu"]
    assert p.limits.min_test_s == 3.0


def test_unknown_problem_is_an_error():
    with pytest.raises(ProblemError, match="no problem named 'nope'"):
        load_problem("nope", BANK)


def test_list_problems_sorted_by_number(tmp_path):
    root = copy_bank(tmp_path)
    shutil.copytree(root / "001-lru-cache", root / "010-lru-ten")
    toml = root / "010-lru-ten" / "problem.toml"
    toml.write_text(toml.read_text().replace('id = "001"', 'id = "010"')
                    .replace('slug = "lru-cache"', 'slug = "lru-ten"'))
    shutil.copytree(root / "001-lru-cache", root / "002-lru-two")
    toml = root / "002-lru-two" / "problem.toml"
    toml.write_text(toml.read_text().replace('id = "001"', 'id = "2"')
                    .replace('slug = "lru-cache"', 'slug = "lru-two"'))
    assert [p.number for p in list_problems(root)] == [1, 2, 10]
    assert load_problem("10", root).slug == "lru-ten"


def test_invalid_toml_names_the_file_and_the_field(tmp_path):
    root = copy_bank(tmp_path)
    toml = root / "001-lru-cache" / "problem.toml"
    toml.write_text(toml.read_text().replace('difficulty = "easy"', 'difficulty = "trivial"')
                    .replace("wall_s = 30", "wall_s = -1"))
    with pytest.raises(ProblemError) as e:
        load_problem(root / "001-lru-cache")
    msg = str(e.value)
    assert str(toml) in msg and "field `difficulty`" in msg and "field `limits.wall_s`" in msg
    assert list_problems(root, strict=False) == []
    with pytest.raises(ProblemError):
        list_problems(root)


def test_unknown_keys_and_bad_module_are_rejected(tmp_path):
    root = copy_bank(tmp_path)
    toml = root / "001-lru-cache" / "problem.toml"
    toml.write_text(toml.read_text().replace('module = "lru"', 'module = "lru-x"')
                    + '\nvisibility = "public"\n')
    with pytest.raises(ProblemError) as e:
        load_problem(root / "001-lru-cache")
    assert "submission.module" in str(e.value) and "visibility" in str(e.value)


def test_broken_toml_syntax(tmp_path):
    root = copy_bank(tmp_path)
    (root / "001-lru-cache" / "problem.toml").write_text("id = \n")
    with pytest.raises(ProblemError, match="not valid TOML"):
        load_problem(root / "001-lru-cache")


def test_tests_are_discovered_without_importing_them(tmp_path):
    p = load_problem(LRU)
    assert [t.name for t in p.tests("public")] == [
        "public/test_basic.py::test_example_put_get", "public/test_basic.py::test_eviction_order"]
    assert [t.function for t in p.tests("hidden")] == [
        "test_update_refreshes", "test_capacity_one", "test_random_ops", "test_stats"]
    assert [t.name for t in p.examples()] == ["public/test_basic.py::test_example_put_get"]
    assert p.weight("hidden/test_hidden.py::test_random_ops") == 2
    assert p.weight("hidden/test_hidden.py::test_stats") == 1
    f = tmp_path / "test_x.py"
    f.write_text("import does_not_exist\n"
                 "import pytest\n"
                 "def helper(): pass\n"
                 "def test_a(): pass\n"
                 "@pytest.mark.parametrize('x', [1, 2])\n"
                 "def test_b(x): pass\n"
                 "class TestC:\n    def test_d(self): pass\n    def other(self): pass\n")
    assert discover_file(f) == [("test_a", 4, False), ("test_b", 6, True),
                                ("TestC::test_d", 8, False)]


def test_version_covers_tests_reference_handbook_and_limits_not_statements(tmp_path):
    root = copy_bank(tmp_path)
    version = lambda: load_problem(root / "001-lru-cache").version  # noqa: E731
    v0 = version()
    assert v0 == version() and len(v0) == 64
    (root / "001-lru-cache" / "__pycache__").mkdir()
    (root / "001-lru-cache" / "__pycache__" / "x.pyc").write_bytes(b"junk")
    assert version() == v0
    statement = root / "001-lru-cache" / "statement.en.md"
    statement.write_text(statement.read_text() + "\nreworded\n")
    assert version() == v0  # prose changes no verdict
    seen = {v0}
    for path in (root / "001-lru-cache" / "tests" / "hidden" / "test_hidden.py",
                 root.parent / "reference" / "lru.py",
                 root.parent / "reference" / "cache_stats.py",
                 root / "001-lru-cache" / "problem.toml"):
        path.write_text(path.read_text() + "\n# changed\n")
        seen.add(version())
    assert len(seen) == 5


def test_missing_handbook_module_is_reported(tmp_path):
    root = copy_bank(tmp_path)
    toml = root / "001-lru-cache" / "problem.toml"
    toml.write_text(toml.read_text().replace('modules = ["cache_stats"]',
                                             'modules = ["cache_stats", "ghost"]'))
    with pytest.raises(ProblemError, match="handbook.modules.*ghost"):
        load_problem(root / "001-lru-cache").handbook_paths
