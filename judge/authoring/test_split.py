"""Cutting a handbook `test.py` into the public file (its examples) and the hidden one.

Every student reads the public file in the Tests tab, so it holds exactly what the examples
need: the `test_example*` functions and the transitive closure of the top-level names they use
(by `ast` and `symtable`, never by running the file). A helper only the hidden tests use (a
whole reference `ref()`, a model class, a table of expected values) is an answer key and stays
in the hidden file. Statements that bind no name (`random.seed(0)`, a `sys.path` line) run for
their effect and are kept, with what they use.

When test.py has no `test_example*` function, its first test is the example, as the handbook's
own runner runs the first test in run mode.
"""

from __future__ import annotations

import ast
import re
import symtable
from dataclasses import dataclass, field
from typing import TypeGuard

from judge.judging import python_ast


@dataclass
class Split:
    public: str
    hidden: str
    examples: list[str]
    others: list[str]
    hidden_helpers: list[str] = field(default_factory=list)  # top-level names kept out of public


def is_test(node: ast.AST) -> TypeGuard[ast.FunctionDef | ast.AsyncFunctionDef]:
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
        node.name.startswith("test_")


def example_and_other_tests(source: str) -> tuple[list[str], list[str]]:
    """(examples, the other tests) among test.py's top-level functions, in source order."""
    tree = python_ast.parse(source)
    tests = [n.name for n in tree.body if is_test(n)]
    examples = [t for t in tests if t.startswith("test_example")] or tests[:1]
    return examples, [t for t in tests if t not in examples]


def _bound(node) -> set[str]:
    """Top-level names a statement binds (imports, definitions, assignment targets, also inside
    `if`/`try` blocks at module level)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    names = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                if a.name != "*":
                    names.add(a.asname or a.name.split(".")[0])
        elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
            continue  # its body is its own scope
        elif isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                            ast.GeneratorExp)):
            continue
        stack.extend(ast.iter_child_nodes(n))
    return names


def _scope_globals(table: symtable.SymbolTable) -> set[str]:
    """Names a function or class (and everything nested in it) reads from the module."""
    out = {s.get_name() for s in table.get_symbols()
           if s.is_referenced() and (s.is_global() or s.is_declared_global())}
    for child in table.get_children():
        out |= _scope_globals(child)
    return out


def _loads(nodes) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}


def _used(node, tables: dict[tuple[str, int], symtable.SymbolTable]) -> set[str]:
    """Module-level names a statement reads when it runs or when its functions are called."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        # decorators, defaults, annotations and bases run in the module's scope
        outer = list(node.decorator_list)
        if isinstance(node, ast.ClassDef):
            outer += node.bases + [k.value for k in node.keywords]
        else:
            a = node.args
            outer += a.defaults + [d for d in a.kw_defaults if d is not None]
        table = tables.get((node.name, node.lineno))
        inner = _scope_globals(table) if table else _loads(node.body)
        return _loads(outer) | inner
    used = _loads([node])
    for n in ast.walk(node):  # lambdas and comprehensions inside a module-level statement
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            t = tables.get((n.name, n.lineno))
            if t:
                used |= _scope_globals(t)
    return used


def _is_main_guard(node) -> bool:
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and \
        "__name__" in ast.unparse(node.test)


def split_tests(source: str) -> Split:
    tree = python_ast.parse(source)
    lines = source.splitlines(keepends=True)
    examples, others = example_and_other_tests(source)
    table = symtable.symtable(source, "test.py", "exec")
    tables: dict[tuple[str, int], symtable.SymbolTable] = {}
    stack = list(table.get_children())
    while stack:
        t = stack.pop()
        tables.setdefault((t.get_name(), t.get_lineno()), t)
        stack.extend(t.get_children())
    # a decorated def's table carries the line of `def`, while ast's lineno is the same line
    body = tree.body
    docstring = body[:1] if body and isinstance(body[0], ast.Expr) and \
        isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str) else []
    keep: set[int] = set()
    wanted: set[str] = set()
    for i, node in enumerate(body):
        if node in docstring:
            keep.add(i)
        elif is_test(node):
            if node.name in examples:
                keep.add(i)
                wanted |= _used(node, tables)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            continue  # test classes are hidden tests
        elif _is_main_guard(node):
            continue
        elif not _bound(node):
            keep.add(i)
            wanted |= _used(node, tables)
    changed = True
    while changed:  # the closure: whatever binds a wanted name, and what it uses in turn
        changed = False
        for i, node in enumerate(body):
            if i in keep or is_test(node) or _is_main_guard(node):
                continue
            if _bound(node) & wanted:
                keep.add(i)
                wanted |= _used(node, tables)
                changed = True
    helpers = []
    for i, node in enumerate(body):
        if i not in keep and not is_test(node) and not _is_main_guard(node) and \
                not isinstance(node, (ast.Import, ast.ImportFrom)):
            helpers += sorted(_bound(node) - wanted)
    public_drop = [_span(n, lines) for i, n in enumerate(body) if i not in keep]
    hidden_drop = [_span(n, lines) for n in body if is_test(n) and n.name in examples]
    return Split(_without(lines, public_drop), _without(lines, hidden_drop), examples, others,
                 sorted(set(helpers)))


def _span(node, lines: list[str]) -> tuple[int, int]:
    """0-based [start, end) of a statement's lines, its decorators and the comments on it."""
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return start, node.end_lineno


def _without(lines: list[str], spans: list[tuple[int, int]]) -> str:
    keep = [True] * len(lines)
    for a, b in spans:
        for i in range(a, b):
            keep[i] = False
    text = "".join(line for line, k in zip(lines, keep) if k)
    return re.sub(r"\n{4,}", "\n\n\n", text)
