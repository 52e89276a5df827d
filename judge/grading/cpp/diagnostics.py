"""A compile error as a report's `compile_error`: the compiler's first error in the student's
own file, at its line; where there is none (the student's file compiles, but the test's call
of it does not, or the link fails), the first error, with nothing of the test's text but the
compiler's sentence: the test file is never shown.
"""

from __future__ import annotations

import re

_ERROR = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)? (?:fatal )?error: "
                    r"(?P<msg>.*)$")
_UNDEFINED = re.compile(r"undefined reference to [`'](?P<name>.*)'")
_LINKER_AT = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):\s*(?:\(.*\):\s*)?undefined reference")
MAX_LINES = 20
# The test's namespace, of a random name per build (prepare.py): "SharedPtr<PJ_<key>::Adapter>"
# is the test's "SharedPtr<Adapter>" to the student.
_KEYED = re.compile(r"\bPJ_[0-9a-f]{16}::")


def compile_error(stderr: str, user_suffix: str, user_name: str = "user.cpp") -> dict:
    """As the student reads it: the test's namespace left out of every name."""
    return _compile_error(_KEYED.sub("", stderr), user_suffix, user_name)


def _compile_error(stderr: str, user_suffix: str, user_name: str) -> dict:
    lines = stderr.splitlines()
    errors = [(i, m) for i, m in ((i, _ERROR.match(ln)) for i, ln in enumerate(lines)) if m]
    own = [(i, m) for i, m in errors if m.group("path").endswith(user_suffix)]
    if own:
        i, m = own[0]
        line = int(m.group("line"))
        return {"exc_type": "CompileError", "line": line,
                "message": f"{m.group('msg')} ({user_name}, line {line})",
                "traceback": _own_lines(lines, user_suffix, user_name)}
    undefined = [_UNDEFINED.search(ln) for ln in lines]
    named = next((u.group("name") for u in undefined if u), None)
    if named is not None:
        at = next((int(m.group("line")) for m in map(_LINKER_AT.match, lines)
                   if m and m.group("path").endswith(user_suffix)), None)
        where = f" ({user_name}, line {at})" if at else ""
        return {"exc_type": "LinkError", "line": at, "traceback": None,
                "message": f"undefined reference to {named}{where}: it is declared but never "
                           "defined"}
    if errors:
        msg = errors[0][1].group("msg")
        return {"exc_type": "CompileError", "line": None, "traceback": None,
                "message": f"the tests do not compile with your file: {msg}"}
    tail = [ln for ln in lines if ln.strip()][-1:] or ["the compiler failed"]
    return {"exc_type": "CompileError", "line": None, "traceback": None,
            "message": _redact(tail[0], user_suffix)}


def _own_lines(lines: list[str], user_suffix: str, user_name: str) -> str:
    """The compiler's lines about the student's file, with its path shortened: nothing
    about the test file."""
    keep = [ln for ln in lines if ln.split(":", 1)[0].endswith(user_suffix)]
    return "\n".join(_redact(ln, user_suffix, user_name) for ln in keep[:MAX_LINES])


def _redact(line: str, user_suffix: str, user_name: str = "user.cpp") -> str:
    head, sep, rest = line.partition(":")
    if sep and head.endswith(user_suffix):
        return f"{user_name}:{rest}"
    return re.sub(r"/\S*/", "", line)
