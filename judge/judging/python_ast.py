"""`ast.parse` for a process with threads.

CPython 3.11 keeps the AST constructor's recursion count in per-interpreter state, not per call:
two threads converting a tree at once (the server's grading workers, `judge check`'s pool, a
test's import being rewritten by pytest) can interleave whenever the collector runs Python code
mid-conversion, and the later one raises SystemError "AST constructor recursion depth mismatch"
on valid code (reproduced on 3.11.2: two threads at different stack depths, a gc callback; about
1 parse in 40 failed). CPython fixed it later (gh-106905). Every parse of ours takes one lock; a
thread outside it (pytest's rewrite) can still race, and that failure is transient, so it is
retried once under the lock.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>", **kwargs) -> ast.Module:
    with _LOCK:
        try:
            return ast.parse(source, filename, **kwargs)
        except SystemError:
            return ast.parse(source, filename, **kwargs)
