"""Which of a problem's handbook modules its public files need: the modules the public tests and
the starter import, and the modules those import in turn. A module only the hidden tests or the
reference use stays on the server (a student's package carries exactly what it runs)."""

from __future__ import annotations

import ast

from judge.judging import python_ast


def imported_names(source: str) -> set[str]:
    """The top-level names of every module `source` imports, at any depth of the file (an
    import inside a function counts: the test calls it). A file that does not parse imports
    nothing here; running it will say why."""
    try:
        tree = python_ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def needed_modules(roots: list[str], available: dict[str, str]) -> list[str]:
    """The names of `available` ({module: source}) that the `roots` sources import, directly or
    through one another, in the order of `available`."""
    wanted: set[str] = set()
    todo = [n for src in roots for n in imported_names(src)]
    while todo:
        name = todo.pop()
        if name in available and name not in wanted:
            wanted.add(name)
            todo.extend(imported_names(available[name]))
    return [name for name in available if name in wanted]
