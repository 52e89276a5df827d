"""Whether a submission compiles, judged by the grading Python's grammar: one check for the
server (before any sandbox, judge/grading/grader.py) and for the page's Run (judge/browser/page_run.py), so a
file the server calls CE is CE in the page too, on the same line, in the same words.

Standard library only: the page loads this file into Pyodide.

The page's Python (Pyodide, 3.14) is newer than the one that grades Submit (the server names
it: `grading_python` in /api/problems/{id}). Code that only the newer grammar accepts would
pass Run and get CE on Submit, so the page also parses the file with the older grammar.

What `ast.parse(feature_version=...)` catches, on 3.14 parsing for 3.11: PEP 695 (`type X =
...`, `def f[T]()`, `class C[T]`), PEP 696 defaults (`[T = int]`), PEP 758 `except A, B:`
(reported at the block's end; moved to the `except` line below) and PEP 750 t-strings. What it
lets through: PEP 701 f-strings (the enclosing quote reused inside a replacement field, a
backslash or a comment in one, a field over two lines in a single-quoted f-string), checked
here from the tokens instead; whatever else has no version gate in the parser; and a newer
standard library (`itertools.batched`), RE on the server, not CE. Where the grading Python is
the newer one nothing more can be checked. The message is this parser's (3.11 often says just
"invalid syntax"); the line is the one the grading parser names.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize

from judge.judging import python_ast
from judge.runner.errors import describe_syntax_error


def check(source: str, filename: str, target=None) -> dict | None:
    """The report's `compile_error` fields (exc_type, message, line, traceback; `hint` when
    only the grading Python rejects the file) or None when it compiles. `target`: the grading
    Python ("3.11"); None when this interpreter is the grading one."""
    try:
        source.encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate
        return {"exc_type": "UnicodeError", "line": None, "traceback": None,
                "message": f"the file is not valid UTF-8 text: {e.reason}"}
    err, only_there = first_syntax_error(source, filename, target)
    if err is None:
        return None
    if not isinstance(err, SyntaxError):  # e.g. a NUL byte, before Python 3.12
        return {"exc_type": type(err).__name__, "line": None, "message": str(err),
                "traceback": None}
    ce = describe_syntax_error(err, filename)
    version = parse_version(target)
    if only_there and version is not None:  # only_there means a target version was named
        there = ".".join(map(str, version))
        here = f"{sys.version_info[0]}.{sys.version_info[1]}"
        ce["hint"] = (f"Submit grades with Python {there}, which does not accept this syntax "
                      f"(the page's Python {here} does).")
    return ce


def parse_version(value) -> tuple[int, int] | None:
    """(3, 11) from "3.11" or [3, 11]; None when absent or not a version."""
    if isinstance(value, str):
        value = value.split(".")[:2]
    try:
        major, minor = (int(x) for x in value)
    except (TypeError, ValueError):
        return None
    return (major, minor)


def first_syntax_error(source: str, filename: str, target=None):
    """(error, only_in_target): the syntax error the grading Python (`target`, e.g. "3.11")
    would report first, or None; only_in_target says this interpreter accepts that code."""
    own = None
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte, before 3.12
        own = exc
    except (RecursionError, MemoryError) as exc:
        # nesting past what the compiler takes (3.11: a 200,000-deep `-` is MemoryError); the
        # file cannot run either way. Not SystemError: the "recursion depth mismatch" once seen
        # here was two threads' ast.parse interleaving (python_ast.py), a judge fault, not a CE.
        own = SyntaxError(f"too deeply nested to compile ({type(exc).__name__})", (filename, 1, 1, ""))
    target = parse_version(target)
    if target is None or target >= sys.version_info[:2] or isinstance(own, ValueError):
        return own, False
    found = []
    try:
        python_ast.parse(source, filename, feature_version=target)
    except SyntaxError as exc:
        found.append(_except_line_fixed(exc, source))
    except ValueError:
        pass
    fstring = _fstring_error(source, filename)
    if fstring is not None:
        found.append(fstring)
    if not found:
        return own, False
    # Both parsers stop at their first error; the grading one's tokenizer meets an f-string as
    # soon as it reaches it, so the earliest line wins.
    older = min(found, key=lambda e: e.lineno or 0)
    same = own is not None and (own.lineno, own.msg) == (older.lineno, older.msg)
    return older, not same


def _except_line_fixed(exc: SyntaxError, source: str) -> SyntaxError:
    """A version gate on a `try` statement is reported at the statement's end (`except A, B:`
    parsed for < 3.14, `except*` for < 3.11); the grading Python reports the `except` line."""
    msg = str(exc.msg)
    if msg.startswith("except expressions without parentheses"):
        def gated(node, h):
            segment = ast.get_source_segment(source, h.type) if h.type is not None else None
            return isinstance(h.type, ast.Tuple) and not (segment or "(").startswith("(")
    elif msg.startswith("Exception groups are only supported"):
        def gated(node, h):
            return type(node).__name__ == "TryStar"
    else:
        return exc
    # The statement is whole before the reported line (the next statement's first token) or
    # on it (the file's end); whatever comes after it may not parse.
    lines = source.splitlines(keepends=True)
    for cut in (len(lines), exc.lineno or 0, (exc.lineno or 1) - 1):
        try:
            tree = python_ast.parse("".join(lines[:cut]))
            break
        except (SyntaxError, ValueError):
            continue
    else:
        return exc
    rows = sorted(h.lineno for node in ast.walk(tree) for h in getattr(node, "handlers", ())
                  if isinstance(h, ast.ExceptHandler) and gated(node, h))
    if rows:
        exc.lineno, exc.end_lineno = rows[0], rows[0]
        exc.offset, exc.end_offset = 1, None
        exc.text = source.splitlines()[rows[0] - 1]
    return exc


_FSTRING_KINDS = {k: {getattr(tokenize, f"{p}STRING_{k}") for p in ("F", "T")
                      if hasattr(tokenize, f"{p}STRING_{k}")}
                  for k in ("START", "MIDDLE", "END")}
_TRIPLE = ('"' * 3, "'" * 3)


class _FString:
    def __init__(self, tok):
        body = tok.string.lstrip("fFrRbBuUtT")
        self.quote = body[:3] if body[:3] in _TRIPLE else body[:1]
        self.depth = 0          # open braces: > 0 inside a replacement field
        self.field_row = None   # where the current replacement field opened
        self.pending = None     # (message, offending token): reported where the string ends


def _fstring_error(source: str, filename: str) -> SyntaxError | None:
    """The first f-string that only PEP 701 (Python 3.12) allows, as a SyntaxError on the line
    the 3.11 parser names (the string's last line for a backslash or a comment, else the
    token's). None where the tokenizer reads an f-string as one STRING: there compile() has
    judged it with the old rules already."""
    if not _FSTRING_KINDS["START"]:
        return None
    lines = source.splitlines()

    def error(msg, row, col):
        text = lines[row - 1] if 0 < row <= len(lines) else None
        return SyntaxError(msg, (filename, row, col + 1, text))

    stack: list[_FString] = []
    found = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            kind = tok.type
            if not stack and kind not in _FSTRING_KINDS["START"]:
                continue
            if kind in _FSTRING_KINDS["MIDDLE"] or kind in _FSTRING_KINDS["END"]:
                around = stack[:-1]  # the innermost string's own text is not in a field of it
            else:
                around = stack[:-1] + [f for f in stack[-1:] if f.depth > 0]
            for f in around:
                if f.quote in tok.string:
                    found.append(error(f"f-string: a replacement field uses {f.quote}, the "
                                       "quote the f-string is written with (Python 3.12+)",
                                       tok.start[0], tok.start[1]))
                if len(f.quote) == 1 and f.field_row is not None and kind != tokenize.NL \
                        and (tok.start[0], tok.end[0]) != (f.field_row, f.field_row):
                    found.append(error("f-string: a replacement field spans lines in a "
                                       "single-quoted f-string (Python 3.12+)", f.field_row, 0))
            if around and stack[0].pending is None:
                if kind == tokenize.COMMENT:
                    stack[0].pending = ("f-string expression part cannot include '#'", tok)
                elif "\\" in tok.string:
                    stack[0].pending = ("f-string expression part cannot include a backslash",
                                        tok)
            if kind in _FSTRING_KINDS["START"]:
                stack.append(_FString(tok))
            elif kind in _FSTRING_KINDS["END"]:
                done = stack.pop()
                if not stack and done.pending is not None:
                    msg, bad = done.pending
                    row = tok.end[0]
                    found.append(error(msg, row, bad.start[1] if bad.start[0] == row else 0))
            elif kind == tokenize.OP and tok.string in ("{", "}"):
                top = stack[-1]
                if tok.string == "{":
                    if top.depth == 0:
                        top.field_row = tok.start[0]
                    top.depth += 1
                elif top.depth > 0:
                    top.depth -= 1
                    if top.depth == 0:
                        top.field_row = None
    except (tokenize.TokenError, SyntaxError):
        pass  # a broken file: compile() reports it
    return min(found, key=lambda e: e.lineno) if found else None
