"""A fixture book of handbook-format problems, imported into a bank of the test's own."""

from __future__ import annotations

from pathlib import Path

from judge.authoring.importer import import_problems
from judge.problem import load_problem


def imported_bank(tmp_path_factory, book: Path, name: str, **import_options) -> dict:
    """{slug: Problem} of every problem in `book`, none refused."""
    root = tmp_path_factory.mktemp(name) / "problems"
    res = import_problems([book], root, **import_options)
    assert not res.refused, res.refused
    return {i.key.split("/")[1]: load_problem(str(i.folder)) for i in res.imported}
