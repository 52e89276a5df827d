"""The handbook's test.cpp, prepared so that the student's binary never computes an expected
value and the student's code cannot reach the test's own code (docs/IMPORTED_GRADING.md,
"C++ problems"). Every line keeps its number, so the compiler's and the sanitizers' lines are
the test file's and the student's own.

- `pj::require_eq(got, want, what)`: `want` becomes `PJ_EXPECT_<key>(want)`, which the
  reference's build expands to `(want)` and the student's to `pj::unseen{}`: the expression is
  not in the student's binary at all. `pj::require(x == y, what)` likewise records `x` and
  drops `y`.
- `#include "user.cpp"` becomes `#include "pj_user_<key>.h"` (user_header): the harness, the
  student's file, an `#undef` of every macro the student's file defined (a macro that
  stringizes `want`, or redefines a helper, never reaches the test's code), the test's later
  `#include`s, and `namespace PJ_<key> {`. The test's own code (its helpers, its oracles)
  lives in that namespace, whose name is random per build: the student's code, which comes
  first, cannot name, declare or call any of it. Its `main` stays the global one (closing the
  namespace just before it, `using namespace PJ_<key>;`, reopening it after), so it keeps
  main's own rules (an implicit `return 0`).
- `tail` closes the namespace and re-exports the namespace-scope operators the test defined
  for the student's types, so the harness still finds them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from judge.problem.cpp_lexer import DIRECTIVE, IDENT, PUNCT, LexError, Token, matching, split_args, tokens

_INCLUDE = re.compile(r'^\s*(?:#|%:)\s*include\s*([<"])([^>"]+)[>"]')
HARNESS = "pj_judge.hpp"
CUDA_HARNESSES = {"judge.cuh": "pj_cuda.cuh", "judge_cublas.cuh": "pj_cublas.cuh",
                  "pj_cuda.cuh": "pj_cuda.cuh"}
_LOW_PRECEDENCE = {"&&", "||", "?", "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
                   "<<=", ">>=", ",", "and", "or"}


class NotPreparable(ValueError):
    """The test file cannot be prepared; the message says why (a maintainer's problem)."""


@dataclass
class Prepared:
    text: str                    # test.cpp as compiled: the same lines, rewritten in place
    hoisted: list[str]           # its #include lines after the student's file, moved up
    operators: list[str]         # namespace-scope operators it defines ("<<", "==")
    expected_rewrites: int       # expected values taken out of the student's binary
    user_line: int               # the line of its #include "user.cpp"
    notes: list[str] = field(default_factory=list)


def prepare(source: str, key: str, user_name: str = "user.cpp", cuda: bool = False) -> Prepared:
    """`cuda`: a .cu test (cuda.py): its judge.cuh is the CUDA harness, and the expected
    argument of `check_close(name, got, want, ...)` is taken out as `require_eq`'s is."""
    try:
        toks = tokens(source)
    except LexError as e:
        raise NotPreparable(f"test file: {e}") from None
    user = [t for t in toks if t.kind == DIRECTIVE and _included(t) == user_name]
    if len(user) != 1:
        raise NotPreparable(f'the test file must #include "{user_name}" exactly once '
                            f"(found {len(user)})")
    edits: list[tuple[int, int, str]] = []
    hoisted = _directive_edits(toks, user[0], key, edits, CUDA_HARNESSES if cuda else None)
    rewrites = _expected_edits(toks, key, edits, cuda)
    after = [t for t in toks if t.start > user[0].end]
    _main_edits(toks, toks.index(user[0]), key, edits)
    return Prepared(_apply(source, edits), hoisted, _operators(after), rewrites, user[0].line)


def _main_edits(toks: list[Token], user_k: int, key: str, edits: list) -> None:
    """main() out of the namespace, on its own lines: `} using namespace PJ_<key>;` before
    its return type, `namespace PJ_<key> {` after its closing brace."""
    depth = 0
    for k in range(user_k + 1, len(toks)):
        t = toks[k]
        if t.kind == PUNCT and t.text in ("{", "}"):
            depth += 1 if t.text == "{" else -1
        if not (depth == 0 and t.kind == IDENT and t.text == "main" and k + 1 < len(toks)
                and toks[k + 1].text == "(" and toks[k - 1].kind == IDENT):
            continue
        close = matching(toks, k + 1)
        body = next((j for j in range(close + 1, len(toks)) if toks[j].text in ("{", ";")),
                    None)
        if body is None or toks[body].text != "{":
            continue  # a declaration of main, not its definition
        first = k - 1
        while first > user_k + 1 and toks[first - 1].kind == IDENT and \
                toks[first - 1].text in ("static", "inline", "extern", "constexpr"):
            first -= 1
        edits.append((toks[first].start, toks[first].start, f"}} using namespace PJ_{key}; "))
        end = matching(toks, body)
        edits.append((toks[end].end, toks[end].end, f" namespace PJ_{key} {{"))
        return
    raise NotPreparable("the test file has no main() after its #include of the student's file")


def _included(t: Token) -> str | None:
    m = _INCLUDE.match(t.text)
    return m.group(2).rsplit("/", 1)[-1] if m and t.name == "include" else None


def _directive_edits(toks, user: Token, key: str, edits: list,
                     harnesses: dict[str, str] | None = None) -> list[str]:
    """The harness for the handbook's judge.hpp, the student's file for its own header; the
    includes after it move into that header (a standard header opened inside the test's
    namespace would not compile), their lines left blank."""
    hoisted = []
    for t in toks:
        if t.kind != DIRECTIVE or t.name != "include":
            continue
        name = _included(t)
        if t is user:
            edits.append((t.start, t.end, f'#include "pj_user_{key}.h"'))
        elif harnesses is not None and name in harnesses:
            edits.append((t.start, t.end, f'#include "{harnesses[name]}"'))
        elif harnesses is None and name in ("judge.hpp", HARNESS):
            edits.append((t.start, t.end, f'#include "{HARNESS}"'))
        elif t.start > user.end:
            hoisted.append(t.text.strip())
            edits.append((t.start, t.end, "\n" * t.text.count("\n")))
    return hoisted


def _expected_edits(toks: list[Token], key: str, edits: list, cuda: bool = False) -> int:
    n = 0
    for k, t in enumerate(toks):
        if t.kind != IDENT or k + 1 >= len(toks) or toks[k + 1].text != "(":
            continue
        if k > 0 and toks[k - 1].text in (".", "->"):  # a member of the same name
            continue
        if t.text == "require_eq":
            _, args = split_args(toks, k + 1)
            if len(args) >= 3:  # got, want (commas and all), what
                first, last = args[1][0], args[-2][1] - 1
                edits.append((toks[first].start, toks[first].start, f"PJ_EXPECT_{key}("))
                edits.append((toks[last].end, toks[last].end, ")"))
                n += 1
        elif t.text == "require":
            n += _require_edit(toks, k, key, edits)
        elif cuda and t.text == "check_close":
            _, args = split_args(toks, k + 1)
            if len(args) >= 3:  # name, got, want[, rtol, atol]
                first, last = args[2][0], args[2][1] - 1
                edits.append((toks[first].start, toks[first].start, f"PJ_EXPECT_{key}("))
                edits.append((toks[last].end, toks[last].end, ")"))
                n += 1
    return n


def _require_edit(toks: list[Token], k: int, key: str, edits: list) -> int:
    """require(A == B, what) -> require(pj::detail::equals(A, EXPECT(B)), what): the
    student's build records A and never computes B; the reference's build records its A and
    checks A == B. A condition that is no single top-level `==` stays a plain require (a
    test keeps a property of two of the student's values so: `require(bool(a == b), ...)`)."""
    _, args = split_args(toks, k + 1)
    if len(args) != 2:
        return 0
    a, b = args[0]
    eq = _top_level(toks, a, b)
    if len(eq) != 1 or eq[0] in (a, b - 1):
        return 0
    at = eq[0]
    edits.append((toks[a].start, toks[a].start, "::pj::detail::equals("))
    edits.append((toks[at].start, toks[at].end, f", PJ_EXPECT_{key}("))
    edits.append((toks[b - 1].end, toks[b - 1].end, "))"))
    return 1


def _top_level(toks: list[Token], a: int, b: int) -> list[int]:
    """Indexes of the top-level `==` in toks[a:b]; [] when a lower-precedence operator (&&,
    ||, ?:, an assignment) makes the comparison only a part of the condition."""
    out, j = [], a
    while j < b:
        t = toks[j]
        if t.kind == PUNCT and t.text in ("(", "[", "{"):
            j = matching(toks, j) + 1
            continue
        if t.text in _LOW_PRECEDENCE and t.kind in (PUNCT, IDENT):
            return []
        if t.kind == PUNCT and t.text == "==":
            out.append(j)
        j += 1
    return out


def _operators(after: list[Token]) -> list[str]:
    """Operators the test declares at its own namespace scope (a member or a friend inside a
    class is found without help), in the order first seen."""
    found, depth = [], 0
    for i, t in enumerate(after):
        if t.kind == PUNCT and t.text == "{":
            depth += 1
        elif t.kind == PUNCT and t.text == "}":
            depth -= 1
        elif t.kind == IDENT and t.text == "operator" and depth == 0 and i + 1 < len(after):
            op = after[i + 1].text
            if after[i + 1].kind == PUNCT and op not in ("(", "[") and op not in found:
                found.append(op)
    return found


def _apply(source: str, edits: list[tuple[int, int, str]]) -> str:
    out, at = [], 0
    for start, end, text in sorted(edits, key=lambda e: (e[0], e[1])):
        out.append(source[at:start])
        out.append(text)
        at = max(at, end)
    out.append(source[at:])
    return "".join(out)


def user_header(p: Prepared, key: str, user_path: str, undefs: list[str], role: str,
                harness: str = HARNESS) -> str:
    """What the test's `#include "user.cpp"` line becomes, for one role ("reference" or
    "submission"); `undefs`: the macros the student's file defined (screen.py)."""
    expect = "(__VA_ARGS__)" if role == "reference" else "::pj::unseen{}"
    lines = [f'#include "{harness}"', f'#include "{user_path}"']
    lines += [f"#undef {name}" for name in undefs]
    lines += p.hoisted
    lines += [f"#define PJ_EXPECT_{key}(...) {expect}", f"namespace PJ_{key} {{"]
    return "\n".join(lines) + "\n"


def tail(p: Prepared, key: str) -> str:
    """Appended after the test's last line (so no line of it moves)."""
    reexport = "".join(f"using PJ_{key}::operator{op};\n" for op in p.operators)
    return f"\n}}  // namespace PJ_{key}\n{reexport}"
