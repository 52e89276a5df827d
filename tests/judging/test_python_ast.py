"""ast.parse from many threads at once, as the server's workers and `judge check`'s pool call it:
CPython 3.11's AST constructor shares its recursion count between threads, and a parse
interleaved with another's raised SystemError on valid code (judge/judging/python_ast.py)."""

import ast
import gc
import sys
import threading

from judge.judging import python_ast

SOURCE = "\n".join(
    f"def f{i}(a, b):\n    return [(x, y) for x in a if x for y in b if (y and (x or y))]"
    for i in range(200))


def _deep(n, fn):
    return _deep(n - 1, fn) if n else fn()


def test_parses_from_threads_at_different_depths_never_fail_or_differ():
    expected = ast.dump(ast.parse(SOURCE))
    errors, trees = [], []

    def parse_many():
        for _ in range(60):
            try:
                trees.append(ast.dump(python_ast.parse(SOURCE)))
            except SystemError as exc:
                errors.append(str(exc))

    # A collection that runs Python code lets the other thread in mid-conversion; the two
    # threads' stack depths differ, so an interleaved count cannot come out right by chance.
    def callback(phase, info):
        sum(range(2000))

    gc.callbacks.append(callback)
    threshold, interval = gc.get_threshold(), sys.getswitchinterval()
    gc.set_threshold(100)
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=_deep, args=(d, parse_many)) for d in (5, 150, 60)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.callbacks.remove(callback)
        gc.set_threshold(*threshold)
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(trees) == 180 and set(trees) == {expected}


def test_a_syntax_error_is_still_a_syntax_error():
    try:
        python_ast.parse("def f(:\n", "solution.py")
    except SyntaxError as exc:
        assert exc.filename == "solution.py" and exc.lineno == 1
    else:
        raise AssertionError("no SyntaxError")
