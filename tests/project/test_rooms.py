"""judge/ is grouped in rooms, and imports go one way: a room imports only the rooms it is
allowed to (the map in judge/__init__.py and docs/ARCHITECTURE.md). A new import that breaks the
order fails here, with the file and the line, before it makes a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

JUDGE = Path(__file__).resolve().parents[2] / "judge"

# room -> the rooms it may import (besides itself). `judge` alone is the package's lazy names.
ALLOWED = {
    "cli": {"authoring", "grading", "browser", "problem", "judging", "messages", "sandbox", "config"},
    "authoring": {"grading", "problem", "judging", "sandbox", "runner", "config"},
    "grading": {"problem", "judging", "sandbox", "runner", "config"},
    "browser": {"judging", "runner"},
    "messages": {"judging"},
    "judging": {"runner"},
    "problem": {"judging", "config"},  # the vocabulary of failure kinds a hint names
    "sandbox": {"config"},
    "runner": set(),
    "config": set(),
    "__main__": {"cli"},
    "__init__": set(),
}
# what `from judge import NAME` resolves to (judge/__init__.py's lazy names)
ROOT_NAMES = {"load_problem": "problem", "list_problems": "problem", "Problem": "problem",
              "ProblemError": "problem", "ProblemBank": "problem", "grade": "grading",
              "check_problem": "authoring", "public_expectations": "grading",
              "Report": "judging", "TestResult": "judging", "Verdict": "judging",
              "JUDGE_VERSION": "__init__", "sandbox": "sandbox", "runner": "runner"}


def _room(path: Path) -> str:
    first = path.relative_to(JUDGE).parts[0]
    return first.removesuffix(".py")


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] != "judge":
                continue
            if len(parts) == 1:
                for alias in node.names:
                    yield node.lineno, ROOT_NAMES.get(alias.name, f"judge.{alias.name}?")
            else:
                yield node.lineno, parts[1]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "judge" and len(parts) > 1:
                    yield node.lineno, parts[1]


def test_every_import_inside_judge_goes_the_allowed_way():
    wrong = []
    for path in sorted(JUDGE.rglob("*.py")):
        room = _room(path)
        for line, target in _imports(path):
            if target != room and target != "__init__" and target not in ALLOWED[room]:
                wrong.append(f"{path.relative_to(JUDGE)}:{line} ({room} -> {target})")
    assert not wrong, wrong


def test_the_top_level_is_small_and_every_room_says_what_lives_there():
    modules = [p.name for p in JUDGE.glob("*.py")]
    assert len(modules) <= 10, modules
    rooms = [p for p in JUDGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    assert {p.name for p in rooms} == set(ALLOWED) - {"config", "__main__", "__init__"}
    for room in rooms:
        doc = ast.get_docstring(ast.parse((room / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc) > 80, f"{room.name}/__init__.py says what lives there"


def test_no_file_of_the_judge_passes_400_lines():
    long = {str(p.relative_to(JUDGE)): n for p in JUDGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert not long, long
