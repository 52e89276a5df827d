"""JSON-lines output of the runner, and the checks on observed values.

One line per event, each a JSON object with an ``ev`` key:

- ``start``         {t, python, pid}
- ``imported``      {t, import_s, cpu_s}                       the submission imported
- ``compile_error`` {t, exc_type, message, line, traceback}    it did not (the run stops)
- ``import_timeout``{t, limit_s}                               importing it took too long
- ``collected``     {tests: [name, ...]}
- ``collect_error`` {file, kind, exc_type, message, line, traceback}
- ``test_started``  {test, t, limit_s}
- ``observation``   {test, i, label, value}
- ``trace``         {test, i, step: {pool, op, args, result, state}}   one call on a traced pool
                    (trace.py): at most 500 per test, 16 KB of JSON each; never an observation
- ``test_finished`` {test, outcome, phase, kind, exc_type, message, line, where, traceback,
                     duration_s, cpu_s}
- ``finished``      {t, tests_s, exit_code, torch, gpu_name}
- ``runner_error``  {message}                                  the runner's own fault

Test names are ``<file relative to the suite dir>::<function>`` (``test_lru.py::test_get``).
Times: ``*_s`` durations are wall clock, ``cpu_s`` is this process's CPU time plus that of the
children it waited for; limits (``limit_s``) are CPU seconds.
"""

from __future__ import annotations

import json
import os
import threading
import time

MAX_LABEL = 200
# A line and its nesting as the parent reads them (judge/judging/bounded.py imports these)
MAX_DEPTH = 64
MAX_LINE_BYTES = 1 << 20


class ObservationError(TypeError):
    """A test called ``observe`` with something that is not JSON data."""


class EventWriter:
    """Writes one JSON object per line, at once: to a pipe the judge passed (``fd``), or
    appended to a results file (``path``, for running the runner by hand)."""

    def __init__(self, path: str | None = None, *, fd: int | None = None):
        if fd is not None:
            # exec'd children do not inherit it; forked ones, and code in this process, can
            # still write to it: the judge trusts what arrives for nothing
            os.set_inheritable(fd, False)
            self._fd = fd
        elif path is not None:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        else:
            raise TypeError("EventWriter needs a path or an fd")
        self._lock = threading.Lock()

    def emit(self, ev: str, *, wait: float = -1, **fields) -> None:
        fields = {"ev": ev, **fields}
        line = (json.dumps(fields, separators=(",", ":"), allow_nan=True) + "\n").encode()
        if ev == "observation" and len(line) > MAX_LINE_BYTES:
            # The parent would not read it anyway (judge/judging/bounded.py): fail the test with a reason.
            raise ObservationError(f"observe: the value is {len(line):,} bytes of JSON; at most "
                                   f"{MAX_LINE_BYTES:,} bytes per observation")
        got = self._lock.acquire(timeout=wait) if wait >= 0 else self._lock.acquire()
        try:
            view = memoryview(line)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        finally:
            if got:
                self._lock.release()


def now() -> float:
    return time.time()


def _type_name(value) -> str:
    t = type(value)
    mod = t.__module__
    return t.__qualname__ if mod == "builtins" else f"{mod}.{t.__qualname__}"


def _hint(value) -> str:
    name = _type_name(value)
    if hasattr(value, "tolist"):
        return f"{name} (convert it with .tolist() or .item())"
    if isinstance(value, (set, frozenset)):
        return f"{name} (convert it with sorted(...))"
    return name


def to_json_data(value, path: str = "value", depth: int = 0):
    """Returns ``value`` as plain JSON data (tuples become lists) or raises ObservationError."""
    if depth > MAX_DEPTH:
        raise ObservationError(f"observe: {path} is nested deeper than {MAX_DEPTH} levels")
    if value is None or value is True or value is False:
        return value
    if isinstance(value, bool):  # a bool subclass? unlikely; keep the truth value
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [to_json_data(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ObservationError(
                    f"observe: {path} has a key of type {_type_name(k)}; keys must be str")
            out[str(k)] = to_json_data(v, f"{path}[{k!r}]", depth + 1)
        return out
    raise ObservationError(f"observe: {path} is a {_hint(value)}, which is not JSON data "
                           "(None, bool, int, float, str, lists, tuples, dicts with str keys)")


def check_label(label) -> str:
    if not isinstance(label, str) or not label.strip():
        raise ObservationError("observe(label, value): label must be a non-empty str")
    if len(label) > MAX_LABEL:
        raise ObservationError(f"observe: label longer than {MAX_LABEL} characters")
    return label
