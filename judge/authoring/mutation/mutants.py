"""Mutants of a reference solution: one small, deterministic change each.

Why a small AST mutator rather than mutmut or cosmic-ray: both rewrite the file in place and
drive their own test runner with their own result database, while here every mutant must be
graded exactly as a student's file is (the sandbox, the reference's cached observations, the
verdict rules). What the gate needs from a library is only its operator list, and that is a
screenful of `ast` code: parse once, change one node, splice the unparsed node back into the
original text (so every other byte, comments and line numbers included, stays as written),
and keep the mutant only if the spliced text parses to exactly the intended tree.

Operators (the usual core set, named by `Mutant.operator`):

    compare    <  <=  >  >=  ==  !=  in  not in  is  is not     each to its boundary/negation
    bool       True <-> False (keyword flags such as popitem(last=False) included)
    boolop     and <-> or
    not        `not x` -> `x`;   negate: `if x` / `while x` / `a if x else b` -> `not x`
    number     an integer n -> n + 1 and n - 1;  `-x` -> `x`
    arith      + <-> -,  * <-> //,  / -> *,  % -> //,  << <-> >>,  & <-> |  (also in `+=`)
    slice      a slice bound b (not a literal) -> b + 1
    loop       break <-> continue
    delete     an expression statement, assignment, `del`, `raise` or `assert` -> pass;
               `return x` -> `return None`

Left alone: docstrings, `__all__`-style dunder assignments, imports, annotations, f-strings
(messages) and logging/print/warnings calls.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

from judge.judging import python_ast

_COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
            ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
            ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult,
          ast.Div: ast.Mult, ast.Mod: ast.FloorDiv, ast.LShift: ast.RShift,
          ast.RShift: ast.LShift, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd}
_LOGGERS = {"log", "logger", "logging", "_log", "_logger", "warnings"}
_SHOWN = 110  # characters of a diff side


@dataclass(frozen=True)
class Mutant:
    index: int          # 1-based, in source order
    line: int           # first line of the changed code
    end_line: int
    operator: str
    before: str         # the changed line(s) as written, whitespace collapsed
    after: str          # the same after the change
    source: str         # the whole mutated file

    def diff(self, path: str) -> str:
        return f"{path}:{self.line}: {self.before} → {self.after}"

    @property
    def lines(self) -> range:
        return range(self.line, self.end_line + 1)


def generate(source: str) -> list[Mutant]:
    """Every mutant of `source`, in source order, without duplicates, each one compiling."""
    tree = python_ast.parse(source)
    src = _Source(source)
    original = ast.dump(tree)
    skip = _skipped(tree)
    sites = []
    for parent in ast.walk(tree):
        if id(parent) in skip:
            continue
        for field, value in ast.iter_fields(parent):
            children = value if isinstance(value, list) else [value]
            for i, child in enumerate(children):
                # only statements and expressions have variants (see _variants)
                if isinstance(child, (ast.expr, ast.stmt)) and id(child) not in skip:
                    slot = (parent, field, i if isinstance(value, list) else None)
                    for rank, (op, new, code) in enumerate(_variants(src, child, parent, field)):
                        sites.append(((child.lineno, child.col_offset, rank), child, slot,
                                      op, new, code))
    sites.sort(key=lambda s: s[0])
    out: list[Mutant] = []
    seen = {source}
    for _, node, slot, op, new, code in sites:
        text = _apply(tree, src, node, slot, new, code, original)
        if text is None or text in seen:
            continue
        seen.add(text)
        before, after = src.shown(node, text)
        out.append(Mutant(len(out) + 1, node.lineno, _end_line(node), op, before, after, text))
    return out


# ---- which nodes change, and into what -------------------------------------------------
# Each variant: (operator, the node that replaces this one, its text or None for unparse).
# The text is built from the original's own text where it can be, so the diff shows the
# operator that changed and not a re-quoted line.

def _end_line(node: ast.expr | ast.stmt) -> int:
    # typeshed allows None for nodes built by hand; every node ast.parse returns has it
    return node.end_lineno if node.end_lineno is not None else node.lineno


def _variants(src: "_Source", node: ast.expr | ast.stmt, parent: ast.AST, field: str) -> list[tuple]:
    out: list[tuple] = []
    seg = src.segment(node)
    if isinstance(node, ast.Compare):
        for i, cmp in enumerate(node.ops):
            if type(cmp) in _COMPARE:
                ops = list(node.ops)
                ops[i] = _COMPARE[type(cmp)]()
                operands = [node.left, *node.comparators]
                out.append(("compare", ast.Compare(node.left, ops, node.comparators),
                            src.swap(node, [(operands[i], operands[i + 1])], cmp, ops[i])))
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        out.append(("bool", ast.Constant(not node.value), None))
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        out += [("number", _int(node.value + 1), None), ("number", _int(node.value - 1), None)]
    elif isinstance(node, ast.BoolOp):
        new_bool = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        pairs = list(zip(node.values, node.values[1:]))
        out.append(("boolop", ast.BoolOp(new_bool, node.values),
                    src.swap(node, pairs, node.op, new_bool)))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        out.append(("not" if isinstance(node.op, ast.Not) else "number", node.operand,
                    src.segment(node.operand)))
    elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        new_op = _ARITH[type(node.op)]()
        out.append(("arith", ast.BinOp(node.left, new_op, node.right),
                    src.swap(node, [(node.left, node.right)], node.op, new_op)))
    elif isinstance(node, ast.Break):
        out.append(("loop", ast.Continue(), None))
    elif isinstance(node, ast.Continue):
        out.append(("loop", ast.Break(), None))
    # a test and a slice bound are always expressions: the isinstance only tells mypy so
    if field == "test" and isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and \
            isinstance(node, ast.expr) and \
            not isinstance(node, (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Constant)):
        out.append(("not", ast.UnaryOp(ast.Not(), node), f"not {seg}"))
    if isinstance(parent, ast.Slice) and isinstance(node, ast.expr) and \
            not isinstance(node, (ast.Constant, ast.UnaryOp)):
        out.append(("slice", ast.BinOp(node, ast.Add(), ast.Constant(1)), f"{seg} + 1"))
    if isinstance(node, ast.AugAssign) and type(node.op) in _ARITH:
        new_op = _ARITH[type(node.op)]()
        out.append(("arith", ast.AugAssign(node.target, new_op, node.value),
                    src.swap(node, [(node.target, node.value)], node.op, new_op, aug=True)))
    if isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete,
                         ast.Raise, ast.Assert)):
        out.append(("delete", ast.Pass(), None))
    elif isinstance(node, ast.Return) and node.value is not None and \
            not (isinstance(node.value, ast.Constant) and node.value.value is None):
        out.append(("delete", ast.Return(ast.Constant(None)), None))
    return out


def _int(n: int) -> ast.AST:
    """An integer as the parser builds it: -1 is `-` applied to 1."""
    return ast.Constant(n) if n >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-n))


def _skipped(tree: ast.AST) -> set[int]:
    """ids of the nodes (whole subtrees) no mutant touches."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.JoinedStr)):
            roots.append(node)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            roots.append(node)  # docstrings and other bare literals
        elif isinstance(node, ast.Expr) and _is_logging(node.value):
            roots.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
                isinstance(t, ast.Name) and t.id.startswith("__") and t.id.endswith("__")
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])):
            roots.append(node)
        elif isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns:
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(n) for r in roots for n in ast.walk(r)}


def _is_logging(call: ast.AST) -> bool:
    if not isinstance(call, ast.Call):
        return False
    f = call.func
    if isinstance(f, ast.Name):
        return f.id == "print"
    while isinstance(f, ast.Attribute):
        f = f.value
    return isinstance(f, ast.Name) and f.id in _LOGGERS


# ---- splicing ------------------------------------------------------------------------------

_OP_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
            ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in", ast.Is: "is",
            ast.IsNot: "is not", ast.And: "and", ast.Or: "or", ast.Add: "+", ast.Sub: "-",
            ast.Mult: "*", ast.FloorDiv: "//", ast.Div: "/", ast.Mod: "%", ast.LShift: "<<",
            ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|"}


class _Source:
    """The original text as UTF-8 lines (ast's column offsets count bytes), and where each
    line's comment starts, so a diff can leave comments out."""

    def __init__(self, source: str):
        self.raw = source.encode("utf-8").splitlines(keepends=True)
        self.comments: dict[int, int] = {}  # line (1-based) -> byte offset of its comment
        try:
            for tok in tokenize.tokenize(io.BytesIO(source.encode("utf-8")).readline):
                if tok.type == tokenize.COMMENT:
                    self.comments[tok.start[0]] = len(tok.line[:tok.start[1]].encode("utf-8"))
        except (tokenize.TokenError, SyntaxError):
            pass

    def text(self, start: tuple[int, int], end: tuple[int, int]) -> str:
        (l0, c0), (l1, c1) = start, end
        if l0 == l1:
            return self.raw[l0 - 1][c0:c1].decode("utf-8")
        parts = [self.raw[l0 - 1][c0:], *self.raw[l0:l1 - 1], self.raw[l1 - 1][:c1]]
        return b"".join(parts).decode("utf-8")

    def segment(self, node) -> str:
        return self.text((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset))

    def swap(self, node, pairs, old, new, aug: bool = False) -> str | None:
        """`node`'s text with the operator between each (left, right) pair changed from `old`
        to `new`; None when the text between them is not just that operator (and brackets)."""
        old_t = _OP_TEXT[type(old)] + ("=" if aug else "")
        new_t = _OP_TEXT[type(new)] + ("=" if aug else "")
        pattern = r"\s+".join(re.escape(w) for w in old_t.split())
        start = (node.lineno, node.col_offset)
        pieces, at = [], start
        for left, right in pairs:
            a, b = (left.end_lineno, left.end_col_offset), (right.lineno, right.col_offset)
            between = self.text(a, b)
            if " ".join(re.sub(r"[()\\]", " ", between).split()) != old_t:
                return None
            pieces += [self.text(at, a), re.sub(pattern, new_t, between, count=1)]
            at = b
        pieces.append(self.text(at, (node.end_lineno, node.end_col_offset)))
        return "".join(pieces)

    def splice(self, node, code: str) -> str:
        first, last = node.lineno - 1, node.end_lineno - 1
        head = b"".join(self.raw[:first]) + self.raw[first][:node.col_offset]
        tail = self.raw[last][node.end_col_offset:] + b"".join(self.raw[last + 1:])
        return (head + code.encode("utf-8") + tail).decode("utf-8")

    def shown(self, node, text: str) -> tuple[str, str]:
        """The changed line(s) before and after, comments left out."""
        first, last = node.lineno - 1, node.end_lineno - 1
        before = [self._uncommented(n) for n in range(first, last + 1)]
        mutated = text.encode("utf-8").splitlines(keepends=True)
        span = len(mutated) - len(self.raw) + last  # the mutated text's last changed line
        after = mutated[first:span + 1]
        cut = self.comments.get(last + 1)
        if cut is not None and cut >= node.end_col_offset and after:  # the same comment ends it
            after[-1] = after[-1][:len(after[-1]) - (len(self.raw[last]) - cut)]
        return (_collapse(b"".join(before).decode("utf-8")),
                _collapse(b"".join(after).decode("utf-8")))

    def _uncommented(self, n: int) -> bytes:
        cut = self.comments.get(n + 1)
        return self.raw[n] if cut is None else self.raw[n][:cut]


def _apply(tree, src: _Source, node, slot, new, code: str | None, original: str) -> str | None:
    """The source with `node` replaced by `new`, or None when that cannot be written as a
    one-node change that compiles (or it changes nothing)."""
    parent, field, i = slot
    container = getattr(parent, field)
    if i is None:
        setattr(parent, field, new)
    else:
        container[i] = new
    try:
        expected = ast.dump(tree)
    finally:
        if i is None:
            setattr(parent, field, node)
        else:
            container[i] = node
    if expected == original:
        return None
    codes = [c for c in (code, ast.unparse(new)) if c is not None]
    if not isinstance(node, ast.stmt):  # an operand may need brackets where it now sits
        codes += [f"({c})" for c in codes]
    for attempt in codes:
        text = src.splice(node, attempt)
        try:
            if ast.dump(python_ast.parse(text)) == expected:
                compile(text, "<mutant>", "exec", dont_inherit=True)
                return text
        except (SyntaxError, ValueError):
            pass
    return None


def _collapse(s: str) -> str:
    s = " ".join(s.split())
    return s if len(s) <= _SHOWN else s[:_SHOWN - 1] + "…"
