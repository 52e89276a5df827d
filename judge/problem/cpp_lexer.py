"""A small C++ lexer: enough to find calls, their arguments and preprocessor directives in a
test file or a student's file without a compiler (judge/grading/cpp/prepare.py, screen.py).

It knows what can hide a token from a naive scan: comments (also between `#` and a
directive's name), string and character literals with their prefixes, raw strings
(`R"x( ... )x"`), backslash-newline splices and the `%:` digraph for `#`. Everything else is an
identifier, a number or a punctuator. Offsets are into the original text, so a rewrite can
splice text in without moving any line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

IDENT, NUMBER, STRING, CHAR, PUNCT, DIRECTIVE = ("ident", "number", "string", "char", "punct",
                                                 "directive")
_PUNCTS = ("<=>", "<<=", ">>=", "->*", "...", "::", "->", "==", "!=", "<=", ">=", "&&", "||",
           "<<", ">>", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*", "##",
           "%:")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.])*")
_RAW = re.compile(r'(?:u8|[uUL])?R"([^()\\\s"]{0,16})\(')
_QUOTED = re.compile(r'(?:u8|[uUL])?(["\'])')
_SPLICE = re.compile(r"\\[ \t]*\r?\n")


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int       # offset of its first character
    end: int         # offset just past it
    line: int        # 1-based line of its first character
    name: str = ""   # a directive's name ("include", "define", "line", a number for "# 12")


class LexError(ValueError):
    """The text cannot be C++ (an unterminated literal or comment); the message says where."""


def tokens(text: str) -> list[Token]:
    """Every token of `text` in order; comments and whitespace are dropped."""
    out: list[Token] = []
    lines = _line_starts(text)
    i, n, at_line_start = 0, len(text), True
    while i < n:
        c = text[i]
        if c == "\n":
            i, at_line_start = i + 1, True
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        splice = _SPLICE.match(text, i)
        if splice:
            i = splice.end()
            continue
        if text.startswith("//", i) or text.startswith("/*", i):
            i = _skip_comment(text, i)
            continue
        if at_line_start and (c == "#" or text.startswith("%:", i)):
            tok = _directive(text, i, lines)
            out.append(tok)
            i = tok.end
            continue
        at_line_start = False
        tok = _token(text, i, lines)
        out.append(tok)
        i = tok.end
    return out


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer(r"\n", text)]


def line_of(lines: list[int], offset: int) -> int:
    lo, hi = 0, len(lines)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if lines[mid] <= offset else (lo, mid)
    return lo + 1


def _skip_comment(text: str, i: int) -> int:
    if text.startswith("//", i):
        while True:  # a line comment ends at a newline that no splice joins to the next line
            j = text.find("\n", i)
            if j < 0:
                return len(text)
            if not re.search(r"\\[ \t]*\r?$", text[i:j]):
                return j
            i = j + 1
    j = text.find("*/", i + 2)
    if j < 0:
        raise LexError(f"line {text.count(chr(10), 0, i) + 1}: a comment is never closed")
    return j + 2


def _directive(text: str, i: int, lines: list[int]) -> Token:
    """A logical line from `#`: its end joins spliced lines; its name skips comments."""
    j = i
    while True:
        k = text.find("\n", j)
        k = len(text) if k < 0 else k
        body = text[j:k]
        # a comment opened on this line may run past its end: skip it whole
        opened = _open_block_comment(body)
        if opened is not None:
            j = _skip_comment(text, j + opened)
            continue
        if re.search(r"\\[ \t]*\r?$", body):
            j = k + 1
            continue
        end = k
        break
    logical = _SPLICE.sub("", text[i:end])
    stripped = re.sub(r"/\*.*?\*/|//.*$", " ", logical, flags=re.S)
    m = re.match(r"\s*(?:#|%:)\s*([A-Za-z_]\w*|[0-9]+)?", stripped)
    return Token(DIRECTIVE, logical, i, end, line_of(lines, i), (m.group(1) or "") if m else "")


def _open_block_comment(line: str) -> int | None:
    """Where a `/*` that this line does not close starts (strings aside), else None."""
    k, in_str = 0, None
    while k < len(line):
        ch = line[k]
        if in_str:
            if ch == "\\":
                k += 2
                continue
            if ch == in_str:
                in_str = None
        elif ch in "\"'":
            in_str = ch
        elif line.startswith("//", k):
            return None
        elif line.startswith("/*", k):
            close = line.find("*/", k + 2)
            if close < 0:
                return k
            k = close + 2
            continue
        k += 1
    return None


def _token(text: str, i: int, lines: list[int]) -> Token:
    line = line_of(lines, i)
    m = _RAW.match(text, i)
    if m:
        close = text.find(")" + m.group(1) + '"', m.end())
        if close < 0:
            raise LexError(f"line {line}: a raw string is never closed")
        return Token(STRING, text[i:close + len(m.group(1)) + 2], i,
                     close + len(m.group(1)) + 2, line)
    m = _QUOTED.match(text, i)
    if m:
        end = _end_of_quoted(text, m.end(), m.group(1), line)
        return Token(STRING if m.group(1) == '"' else CHAR, text[i:end], i, end, line)
    m = _IDENT.match(text, i)
    if m:
        return Token(IDENT, m.group(), i, m.end(), line)
    m = _NUMBER.match(text, i)
    if m:
        return Token(NUMBER, m.group(), i, m.end(), line)
    for p in _PUNCTS:
        if text.startswith(p, i):
            return Token(PUNCT, p, i, i + len(p), line)
    return Token(PUNCT, text[i], i, i + 1, line)


def _end_of_quoted(text: str, j: int, quote: str, line: int) -> int:
    while j < len(text):
        ch = text[j]
        if ch == "\\":
            j += 2
            continue
        if ch == quote:
            return j + 1
        if ch == "\n":
            break
        j += 1
    raise LexError(f"line {line}: a {'string' if quote == chr(34) else 'character'} literal "
                   "is never closed")


def matching(toks: list[Token], k: int) -> int:
    """Index of the bracket that closes the `(`, `[` or `{` at toks[k]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[toks[k].text]]
    for j in range(k + 1, len(toks)):
        t = toks[j].text if toks[j].kind == PUNCT else ""
        if t in pairs:
            stack.append(pairs[t])
        elif t in (")", "]", "}"):
            if t != stack.pop():
                break
            if not stack:
                return j
    raise LexError(f"line {toks[k].line}: {toks[k].text!r} is never closed")


_IN_TEMPLATE_ARGS = {"::", ",", "*", "&", "&&", "...", "(", ")", "[", "]", "<", ">", ">>"}
_NOT_A_TYPE = {"return", "case", "throw", "co_return", "co_yield", "sizeof", "alignof",
               "and", "or", "not"}


def angle_close(toks: list[Token], k: int, limit: int) -> int | None:
    """Where the `>` that closes a template's `<` at toks[k] is, when toks[k] reads as one
    (an identifier before it, only type-like tokens up to a balancing `>`); else None. `a < b`
    in an argument is a comparison as long as no `>` balances it before the argument ends."""
    if k == 0 or toks[k - 1].kind != IDENT or toks[k - 1].text in _NOT_A_TYPE:
        return None
    depth, j = 0, k
    while j < limit:
        t = toks[j]
        if t.kind == PUNCT and t.text not in _IN_TEMPLATE_ARGS:
            return None
        if t.kind == PUNCT and t.text in ("(", "["):
            j = matching(toks, j) + 1
            continue
        if t.kind == PUNCT and t.text == ")":
            return None
        if t.kind == PUNCT and t.text == "<":
            depth += 1
        elif t.kind == PUNCT and t.text in (">", ">>"):
            depth -= len(t.text)
            if depth <= 0:
                return j
        j += 1
    return None


def split_args(toks: list[Token], open_k: int) -> tuple[int, list[tuple[int, int]]]:
    """(index of the `)` closing the call's `(` at toks[open_k], the arguments as
    [first, past-last) token ranges split at top-level commas)."""
    close = matching(toks, open_k)
    args, first, j = [], open_k + 1, open_k + 1
    while j < close:
        t = toks[j]
        if t.kind == PUNCT and t.text in ("(", "[", "{"):
            j = matching(toks, j) + 1
            continue
        if t.kind == PUNCT and t.text == "<":
            end = angle_close(toks, j, close)
            if end is not None:
                j = end + 1
                continue
        if t.kind == PUNCT and t.text == ",":
            args.append((first, j))
            first = j + 1
        j += 1
    if first < close or args:
        args.append((first, close))
    return close, args


def case_names(text: str) -> list[tuple[str, int]]:
    """(name, line) of each case a C++ test's main() runs, in order: the string literal that
    is the first argument of a call made in main's body (`pj::run("name", ...)`, the CUDA
    tests' `run_case("name", n)`). A name built at run time is not found here; the grading
    takes the cases the reference's run reports (judge/grading/cpp/)."""
    try:
        toks = tokens(text)
    except LexError:
        return []
    for k, t in enumerate(toks):
        if t.kind == IDENT and t.text == "main" and k + 1 < len(toks) and toks[k + 1].text == "(":
            close = matching(toks, k + 1)
            body = close + 1
            while body < len(toks) and toks[body].text != "{":
                body += 1
            if body < len(toks):
                return _calls_with_names(toks, body, matching(toks, body))
    return []


_NOT_CASES = {"printf", "puts", "fprintf", "perror", "string", "assert"}


def _calls_with_names(toks: list[Token], start: int, end: int) -> list[tuple[str, int]]:
    """Only statements of main itself: a call inside a case's lambda is the case's code."""
    out, seen, j = [], set(), start + 1
    while j < end - 2:
        if toks[j].kind == PUNCT and toks[j].text in ("(", "[", "{") and not (
                toks[j].text == "(" and j > 0 and toks[j - 1].kind == IDENT):
            j = matching(toks, j) + 1
            continue
        if toks[j].kind == IDENT and toks[j + 1].text == "(":
            first, call_end = j + 2, matching(toks, j + 1)
            if toks[j].text not in _NOT_CASES and toks[first].kind == STRING and \
                    toks[first].text.startswith('"'):
                name = toks[first].text[1:-1]
                if name and name not in seen and re.fullmatch(r"[\w.\-/\[\]=, ]+", name):
                    seen.add(name)
                    out.append((name, toks[first].line))
            j = call_end + 1
            continue
        j += 1
    return out

