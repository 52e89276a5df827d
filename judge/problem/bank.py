"""The problem bank: the problem folders under one root, found by number, slug or folder name.

    bank = ProblemBank()                    # $KVPRACTICE_PROBLEMS or <repo>/problems
    bank.get("143") or bank.get("0143") or bank.get("tiered-kv-cache")   # a Problem, or None
    bank.list()                             # valid problems by number; bank.errors: the others

Folders are read on every lookup (a handful of small files), so an edited problem shows at
once. `load_problem` also takes a folder path (the command lines); a bank never does, since
its names come from web requests.
"""

from __future__ import annotations

import os
from pathlib import Path

from judge.config import settings
from judge.problem.config import ProblemError, parse_config
from judge.problem.folder import Problem


def problems_root(root: str | os.PathLike | None = None) -> Path:
    return Path(root) if root is not None else settings().problems_dir


def _matches(text: str, folder: Path, problem: Problem | None = None) -> bool:
    """`text` names this folder: its number (leading zeros allowed), slug, or folder name."""
    text = text.strip().lower()
    names = {folder.name.lower()}
    number = folder.name.split("-", 1)[0]
    slug = folder.name.split("-", 1)[-1]
    if problem is not None:
        names |= {problem.slug, problem.key}
        number = problem.id
    names.add(slug.lower())
    return text in names or (text.isdigit() and number.isdigit() and int(text) == int(number))


class ProblemBank:
    """The problems under `root`; `handbook_dir` overrides where their handbook modules are."""

    def __init__(self, root: str | os.PathLike | None = None,
                 handbook_dir: str | os.PathLike | None = None):
        self.root = problems_root(root)
        self.handbook_dir = Path(handbook_dir) if handbook_dir else None
        self.errors: dict[str, str] = {}   # folder name -> why it is not in list()

    def _folders(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return [f for f in sorted(self.root.iterdir()) if (f / "problem.toml").is_file()]

    def _load(self, folder: Path) -> Problem:
        return Problem(folder, parse_config(folder / "problem.toml"), self.handbook_dir)

    def list(self, *, strict: bool = False) -> list[Problem]:
        """Every valid problem, by number. An invalid folder is left out and its reason kept in
        `errors` (a broken folder must not take a site down), or raised with strict=True."""
        out, errors = [], {}
        for folder in self._folders():
            try:
                out.append(self._load(folder))
            except ProblemError as exc:
                if strict:
                    raise
                errors[folder.name] = f"{type(exc).__name__}: {exc}"
        self.errors = errors
        return sorted(out, key=lambda p: (p.number, p.slug))

    def get(self, name: str) -> Problem | None:
        """The problem `name` denotes, or None (never a path outside the bank)."""
        text = str(name)
        for folder in self._folders():
            if not _matches(text, folder):
                continue
            try:
                return self._load(folder)
            except ProblemError:
                return None
        for problem in self.list():  # a slug that differs from its folder's name
            if _matches(text, problem.path, problem):
                return problem
        return None


def load_problem(name_or_path: str | os.PathLike | Problem, root=None) -> Problem:
    """A problem by number ("143", "0143", "7"), slug, folder name ("143-tiered-kv-cache") or
    folder path; raises ProblemError when there is none or it is invalid."""
    if isinstance(name_or_path, Problem):
        return name_or_path
    as_path = Path(str(name_or_path))
    if (as_path / "problem.toml").is_file() or as_path.is_dir():
        return Problem(as_path, parse_config(as_path / "problem.toml"))
    bank = ProblemBank(root)
    for folder in bank._folders():
        if _matches(str(name_or_path), folder):
            return bank._load(folder)
    raise ProblemError(f"no problem named {str(name_or_path)!r} in {bank.root}")


def list_problems(root=None, *, strict: bool = True) -> list[Problem]:
    """Every problem under `root` (default: <repo>/problems), sorted by number.
    With strict=False an invalid folder is skipped instead of raising ProblemError."""
    return ProblemBank(root).list(strict=strict)
