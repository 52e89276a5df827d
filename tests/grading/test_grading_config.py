"""The grading core's configuration is one object (judge.config), the only reader of the
environment in judge/ (the sandboxed runner, a process of its own, aside)."""

import ast
from pathlib import Path

from judge.config import ENV_NAMES, settings
from judge.grading.environment import cuda_available, grading_python
from judge.grading.reference_cache import ReferenceCache
from judge.judging import python_ast
from judge.problem import ProblemBank

JUDGE = Path(__file__).resolve().parents[2] / "judge"
# The terminal's own conventions (locale, NO_COLOR), read where the terminal is written.
TERMINAL = {"cli/console.py"}
# Files the student's package ships whole (judge/handout/build.py), where judge.config is not:
# the package's local run hands its child this process's environment, as a terminal does.
PACKAGE_SIDE = {"handout/local_run.py"}


def _reads_environment(tree: ast.AST) -> list[int]:
    """Lines that use os.environ / os.getenv other than to set a variable."""
    stores = {n.lineno for n in ast.walk(tree)
              if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)}
    return [n.lineno for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr in ("environ", "getenv", "environb")
            and isinstance(n.value, ast.Name) and n.value.id == "os" and n.lineno not in stores]


def test_only_judge_config_reads_the_environment():
    from judge.handout.build import RUNNER_EXTRA

    assert {f"judge/{rel}" for rel in PACKAGE_SIDE} <= set(RUNNER_EXTRA)  # shipped, so aside
    readers = {}
    for path in JUDGE.rglob("*.py"):
        rel = path.relative_to(JUDGE).as_posix()
        if rel.startswith("runner/") or rel == "config.py" or rel in TERMINAL | PACKAGE_SIDE:
            continue
        lines = _reads_environment(python_ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            readers[rel] = lines
    assert readers == {}


def test_the_settings_follow_the_environment(monkeypatch, tmp_path):
    for name in ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    first = settings()
    assert settings() is first  # built once while nothing changes
    monkeypatch.setenv("KVPRACTICE_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("KVPRACTICE_PROBLEMS", str(tmp_path / "p"))
    monkeypatch.setenv("JUDGE_PARALLEL", "0")
    monkeypatch.setenv("JUDGE_GRADING_PYTHON", "3.12")
    monkeypatch.setenv("JUDGE_FORCE_CPU", "1")
    now = settings()
    assert now is not first and now.cache_dir == tmp_path / "c" and now.parallel is False
    assert ReferenceCache().dir == tmp_path / "c" / "judge" / "reference"
    assert ProblemBank().root == tmp_path / "p"
    assert grading_python() == "3.12"
    cuda_available.cache_clear()
    assert cuda_available() is False
    cuda_available.cache_clear()
    monkeypatch.setenv("JUDGE_GRADING_PYTHON", "python4")   # not a version: this Python's
    assert grading_python().startswith("3.")
