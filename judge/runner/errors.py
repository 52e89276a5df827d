"""Classifying an exception raised while a test ran, and showing only the student's frames."""

from __future__ import annotations

import os
import traceback

from .events import ObservationError

MAX_MESSAGE = 2000


class JudgeTimeout(BaseException):
    """Raised in the test by the per-test timer. A BaseException, so `except Exception` in a
    submission does not swallow it."""


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


def _under(path: str, folder: str) -> bool:
    try:
        return os.path.realpath(path).startswith(os.path.realpath(folder) + os.sep)
    except (OSError, ValueError, TypeError):
        return False


def _frames(tb) -> list[traceback.FrameSummary]:
    try:
        return list(traceback.extract_tb(tb))
    except Exception:  # a submission can make frames odd (bad __file__, exec'd code)
        return []


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:
        text = "<the exception's str() failed>"
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + " ..."
    return text


_OWN = __name__.rsplit(".", 1)[0]


def _exc_type(exc: BaseException) -> str:
    t = type(exc)
    mod = str(getattr(t, "__module__", "") or "")
    if mod == "builtins" or mod == _OWN or mod.startswith(_OWN + "."):
        return t.__qualname__
    return f"{mod}.{t.__qualname__}"


def format_student_frames(frames, submission: str) -> str:
    """The traceback lines that lie in the submission file, named by its base name."""
    name = os.path.basename(submission)
    lines = []
    for f in frames:
        if _same_file(f.filename, submission):
            lines.append(f'  File "{name}", line {f.lineno}, in {f.name}')
            if f.line:
                lines.append(f"    {f.line.strip()}")
    return "\n".join(lines)


def describe(exc: BaseException, tb, submission: str, suite_dir: str) -> dict:
    """Fields of a failed test: kind, exc_type, message, line (in the submission), where
    (file:line of the innermost test-file frame), traceback (student frames + the error line).

    kinds: timeout | memory | observe | student (an exception from the submission's frames)
           | assertion (failed assert in the test) | test (another error in test/handbook code)
    """
    frames = _frames(tb)
    student = [f for f in frames if _same_file(f.filename, submission)]
    in_tests = [f for f in frames if _under(f.filename, suite_dir)]
    if isinstance(exc, JudgeTimeout):
        kind = "timeout"
    elif isinstance(exc, MemoryError):
        kind = "memory"
    elif isinstance(exc, ObservationError):
        kind = "observe"
    elif student:
        kind = "student"
    elif isinstance(exc, AssertionError):
        kind = "assertion"
    else:
        kind = "test"
    line = student[-1].lineno if student else None
    where = None
    if in_tests:
        f = in_tests[-1]
        where = f"{os.path.relpath(f.filename, suite_dir)}:{f.lineno}"
    trace = format_student_frames(frames, submission)
    head = f"{_exc_type(exc)}: {_message(exc)}".rstrip(": ")
    return {
        "kind": kind,
        "exc_type": _exc_type(exc),
        "message": _message(exc),
        "line": line,
        "where": where,
        "traceback": (trace + "\n" + head) if trace else head,
    }


def describe_syntax_error(exc: SyntaxError, filename: str) -> dict:
    """CE fields of a SyntaxError in the submission: exc_type, message, line, traceback.

    The one format for every place a submission's syntax is judged: the grading parent's check
    before any sandbox and the page's Run (both through judge/judging/syntax.py), and the runner's
    import inside a sandbox, so Run and Submit show the same text for the same file."""
    name = os.path.basename(filename)
    line = exc.lineno if isinstance(exc.lineno, int) else None
    text = (exc.text or "").strip()
    trace = f'  File "{name}", line {line}' if line else f'  File "{name}"'
    if text:
        trace += f"\n    {text}"
    return {"exc_type": _exc_type(exc), "line": line,
            "message": f"{exc.msg} (line {line})" if line else str(exc.msg),
            "traceback": f"{trace}\n{_exc_type(exc)}: {exc.msg}"}


def describe_import_error(exc: BaseException, tb, submission: str) -> dict:
    """The submission failed to import: type, message, line in the submission file."""
    if isinstance(exc, SyntaxError) and exc.filename and _same_file(exc.filename, submission):
        return describe_syntax_error(exc, submission)
    frames = _frames(tb)
    student = [f for f in frames if _same_file(f.filename, submission)]
    trace = format_student_frames(frames, submission)
    head = f"{_exc_type(exc)}: {_message(exc)}"
    return {"exc_type": _exc_type(exc), "message": _message(exc),
            "line": student[-1].lineno if student else None,
            "traceback": (trace + "\n" + head) if trace else head}
