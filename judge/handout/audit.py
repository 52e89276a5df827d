"""What must never be in a student's package, and the search for it in every file of one.

A problem's secrets: the names of its hidden tests and hidden test files and the module names of
its hidden-only helpers (those it does not show anyway, as a public test of the same name), and
the code of its reference solution, its hidden test files and helpers and the text of its
explanation. Code is looked for line by line: a line of a secret
that is long enough to be its own (DISTINCT_CHARS) and appears nowhere in what the problem shows
anyway (its starter, public files, statements, handbook modules). A file with MIN_LINES such
lines of one secret among its own lines (all of them, when the secret has fewer; in a JSON file,
the lines of its strings too) holds that secret: one shared line may be chance, several are a
copy.

build.py runs this over every package it makes and refuses to hand out one that fails;
tests/cli/test_student_package.py searches the packages again by its own rules.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from judge.problem import Problem

DISTINCT_CHARS = 24
MIN_LINES = 3
# Lines every Python file may share with another one: they tell nothing about a solution.
_COMMON = re.compile(r"^(from \S+ import .*|import \S+( as \S+)?|if __name__ == .*|"
                     r"return (None|True|False|self)|raise NotImplementedError.*|"
                     r"#.*noqa.*|[\"']{3}.*)$")


@dataclass
class Secrets:
    problem: str
    names: set[str] = field(default_factory=set)            # words that must not appear
    code: dict[str, set[str]] = field(default_factory=dict)  # secret -> its distinct lines


def _lines(text: str) -> set[str]:
    return {s for line in text.splitlines() if len(s := line.strip()) >= DISTINCT_CHARS}


def secrets_of(problem: Problem, shown: list[str]) -> Secrets:
    """The problem's secrets; `shown` are the texts it shows anyway (their lines are no
    secret even where a secret file has them too)."""
    out = Secrets(problem.name)
    known = set().union(*(_lines(t) for t in shown)) if shown else set()
    hidden = problem.suite_dir("hidden")
    for t in problem.tests("hidden"):
        out.names |= {t.function.rsplit("::", 1)[-1], Path(t.file).stem}
    files = sorted(p for p in hidden.rglob("*") if p.is_file()) if hidden.is_dir() else []
    for path in files:
        if path.suffix == ".py" and not path.name.startswith("test_"):
            out.names.add(path.stem)  # a hidden-only helper module
        secret = f"hidden/{path.relative_to(hidden).as_posix()}"
        out.code[secret] = _distinct(path.read_text(encoding="utf-8", errors="replace"), known)
    # a name the problem shows anyway (a public test of the same name, the statement's list of
    # what the tests cover) gives nothing away
    shown_text = "\n".join(shown)
    out.names = {n for n in out.names if not _word(n).search(shown_text)}
    if problem.reference_path.is_file():
        out.code["reference " + problem.reference_path.name] = _distinct(
            problem.reference_path.read_text(encoding="utf-8"), known)
    for path in sorted(problem.path.glob("explanation.*.md")):
        out.code[path.name] = _distinct(path.read_text(encoding="utf-8"), known)
    return out


def _word(name: str) -> re.Pattern:
    return re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")


def _distinct(text: str, known: set[str]) -> set[str]:
    return {s for s in _lines(text) if s not in known and not _COMMON.match(s)}


def _file_lines(path: str, text: str) -> set[str]:
    """A file's lines, stripped; in a JSON file also the lines of every string in it (code
    inside a JSON string is escaped, so its lines are not the file's)."""
    out = {line.strip() for line in text.splitlines()}
    if path.endswith(".json"):
        try:
            todo = [json.loads(text)]
        except ValueError:
            todo = []
        while todo:
            value = todo.pop()
            if isinstance(value, str):
                out |= {line.strip() for line in value.splitlines()}
            elif isinstance(value, dict):
                todo += [*value.keys(), *value.values()]
            elif isinstance(value, list):
                todo += value
    return out


def findings(files: dict[str, bytes], secrets: list[Secrets], names: bool = True) -> list[str]:
    """"<path>: <what> of <problem>" for each secret a file holds; [] for a clean package.
    `names=False` looks for code only: another problem's hidden test may have the name of this
    one's public test (`test_capacity_zero`), which gives nothing away."""
    found = []
    for path, data in sorted(files.items()):
        text = data.decode("utf-8", errors="replace")
        have = _file_lines(path, text)
        for s in secrets:
            found += [f"{path}: hidden name {n!r} of {s.problem}" for n in sorted(s.names)
                      if names and _word(n).search(text)]
            for secret, lines in s.code.items():
                hits = len(lines & have)
                if lines and hits >= min(MIN_LINES, len(lines)):
                    found.append(f"{path}: {hits} lines of {secret} of {s.problem}")
    return found
