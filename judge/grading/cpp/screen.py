"""What the student's file may not do to the test it is compiled into, checked before it is
compiled for real (a refusal is CE, naming the line):

- change what the compiler believes the file and line are (`#line`, or a GNU line marker
  `# 12 "x"`): the checks below, and every report, go by the file a line is in;
- include anything but the standard headers (the test file itself, through `__BASE_FILE__`
  or `__FILE__`, is the obvious one);
- name a sanitizer's own interface (`__asan_default_options`, `__lsan_is_turned_off`, ...)
  or turn the instrumentation off (`no_sanitize` and its spellings): a report is the judge's
  to receive, not the program's to silence.

It also lists the macros the student's file defines, so the test's part of the translation
unit can `#undef` each of them (prepare.user_header). All of this is read off the
preprocessed translation unit (`g++ -E -dD`), after macro expansion: a token pasted together
by a macro is seen as what it became.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from judge.problem.cpp_lexer import DIRECTIVE, IDENT, LexError, tokens

_MARKER = re.compile(r'^#\s+(\d+)\s+"((?:[^"\\]|\\.)*)"((?:\s+\d)*)\s*$')
_DEFINE = re.compile(r"^#\s*(define|undef)\s+([A-Za-z_]\w*)")
HOOK_PREFIXES = ("asan_", "lsan_", "ubsan_", "tsan_", "msan_", "hwasan_", "sanitizer_",
                 "sancov_", "dfsan_")
OFF_SWITCHES = {"no_sanitize", "no_sanitize_address", "no_address_safety_analysis",
                "no_sanitize_thread", "no_sanitize_undefined", "no_sanitize_memory",
                "disable_sanitizer_instrumentation", "no_stack_protector"}


@dataclass
class Screened:
    macros: list[str] = field(default_factory=list)   # defined (or undefined) by the student
    refusal: tuple[int | None, str] | None = None       # (line in user.cpp, why)


def raw(source: str) -> tuple[int | None, str] | None:
    """Directives that would move lines or files, found in the student's own text."""
    try:
        toks = tokens(source)
    except LexError as e:
        m = re.match(r"line (\d+): (.*)", str(e))
        return (int(m.group(1)), m.group(2)) if m else (None, str(e))
    for t in toks:
        if t.kind == DIRECTIVE and (t.name == "line" or t.name.isdigit()):
            return t.line, "a #line directive is not allowed: reports name your file's own lines"
    return None


def preprocessed(text: str, user_path: str, allowed_roots: tuple[str, ...],
                 harness_path: str, extra=None) -> Screened:
    """Reads `g++ -E -dD` output: which file each line is from (its line markers), the
    macros defined while in `user_path`, the files it entered, its tokens. `extra`: more
    refusals, read off the same lines of the student's file (a CUDA solution's: cuda.py)."""
    out, line, region = Screened(), 0, []
    stack: list[str] = []  # the files entered, the one read now on top
    for raw_line in text.splitlines():
        m = _MARKER.match(raw_line)
        if m:
            line, name, flags = int(m.group(1)) - 1, _unescape(m.group(2)), m.group(3).split()
            if "1" in flags:  # entering `name` from the file on top
                if stack and stack[-1] == user_path and not _allowed(name, allowed_roots,
                                                                       harness_path):
                    out.refusal = out.refusal or (line, _include_refusal(name, user_path))
                stack.append(name)
            elif "2" in flags:
                while stack and stack[-1] != name:
                    stack.pop()
            elif not stack:
                stack.append(name)
            else:
                stack[-1] = name
            continue
        line += 1
        if stack and stack[-1] == user_path:
            d = _DEFINE.match(raw_line)
            if d:
                if d.group(2) not in out.macros:
                    out.macros.append(d.group(2))
            else:
                region.append((line, raw_line))
    out.refusal = out.refusal or _forbidden(region) or (extra(region) if extra else None)
    return out


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s)


def _allowed(name: str, roots: tuple[str, ...], harness: str) -> bool:
    return name == harness or name.startswith("<") or any(
        name.startswith(r.rstrip("/") + "/") for r in roots)


def _include_refusal(name: str, user_path: str) -> str:
    if name == user_path:
        return "your file includes itself"
    return "only the standard library's headers may be included (not the test's files)"


def _forbidden(region: list[tuple[int, str]]) -> tuple[int, str] | None:
    for line, text in region:
        try:
            toks = tokens(text)
        except LexError:
            continue  # a literal split across lines: the compiler says what is wrong
        for t in toks:
            if t.kind != IDENT:
                continue
            word = t.text.strip("_")
            if word.startswith(HOOK_PREFIXES):
                return line, f"`{t.text}` is the sanitizer's own interface, which your code " \
                             "may not use"
            if word in OFF_SWITCHES:
                return line, f"`{t.text}` turns the sanitizers off, which your code may not do"
            if t.text in ("__BASE_FILE__", "__FILE_NAME__"):
                return line, f"`{t.text}` names the test's file"
    return None
