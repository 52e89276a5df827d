"""Reading what a sandboxed child wrote: its runner's JSON lines, trusted for nothing.

Every field is type-checked; malformed lines are dropped; sizes are capped. What comes out is
"what the child said", to be compared with the reference by the parent.

The lines arrive in the order they were written (a pipe), and the runner writes them in one
order only: `start`, then `imported`, `collected`, then for one test at a time `test_started`,
its observations and trace steps, `test_finished`, and `finished` last. The submission runs in the same
process and can write lines too, but not without breaking that order somewhere, because the
runner still writes its own. So nothing is "first come, first kept": a line that does not fit
the order is dropped, and a test named in one, or running when it came, is `tampered`, which
fails it. A repeated once-only event (`start`, `imported`, `collected`, `finished`) is dropped.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field
from typing import Any

from judge.judging.bounded import (
    MAX_LINE_BYTES,
    MAX_RUN_BYTES,
    MAX_RUN_VALUES,
    line_problem,
    run_problem,
    test_named_in,
    too_long,
    unfinished_problem,
    values_in,
)

MAX_RESULTS_BYTES = 64 * 1024 * 1024
MAX_OBSERVATIONS = 100_000
MAX_TRACE_STEPS = 500       # per test, as the runner writes them (runner/trace.py)
MAX_TRACE_TOTAL = 20_000
MAX_STEP_BYTES = 20 * 1024  # the runner's 16 KB and some slack for its encoding
MAX_TEXT = 4000
MAX_TAMPERED = 10_000  # names kept; beyond that every test counts as tampered
MAX_COLLECT_ERRORS = 100
_KEPT = ("observation", "trace")  # the events whose values the parent keeps for the run


def read_capped(path: str | os.PathLike, offset: int = 0,
                cap: int = MAX_RESULTS_BYTES) -> bytes:
    """Bytes of a regular file written by the child (never follows a symlink, never blocks on a
    FIFO), from `offset`, at most `cap` bytes in all."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        os.lseek(fd, offset, os.SEEK_SET)
        chunks, left = [], max(0, cap - offset)
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _str(v, limit: int = MAX_TEXT) -> str | None:
    if not isinstance(v, str):
        return None
    return v if len(v) <= limit else v[:limit] + " ..."


def _num(v) -> float | None:
    # json.loads accepts NaN and Infinity; no time or count of ours is ever one.
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(v)
    return None


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass
class TestRecord:
    __test__ = False  # not a pytest test class

    name: str
    started_t: float | None = None
    limit_s: float | None = None
    observations: list[dict] = field(default_factory=list)
    trace: list[dict] = field(default_factory=list)  # {i, pool, op, args, result, state}
    finished: dict | None = None      # outcome, kind, exc_type, message, line, where, ...
    oversized: str | None = None      # why one of its lines was too big to read (bounded.py)

    @property
    def outcome(self) -> str | None:
        return self.finished["outcome"] if self.finished else None


@dataclass
class ChildLog:
    started_t: float | None = None
    import_s: float | None = None
    import_cpu_s: float | None = None     # the child's word: for display only (clock.py)
    imported_t: float | None = None
    compile_error: dict | None = None
    import_timeout: bool = False
    collected: list[str] | None = None
    collect_errors: list[dict] = field(default_factory=list)
    tests: dict[str, TestRecord] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)   # tests in the order they started
    finished: dict | None = None
    runner_error: str | None = None
    n_observations: int = 0
    n_trace_steps: int = 0
    tampered: set[str] = field(default_factory=set)  # tests with lines out of order
    _open: str | None = None                         # the test between its start and finish
    _seen: set[str] = field(default_factory=set)     # once-only events already applied
    kept_bytes: int = 0                              # of observation and trace lines kept
    kept_values: int = 0                             # JSON values in them (values_in)
    _rest: bytearray = field(default_factory=bytearray)  # the unfinished last line
    _dropping: bool = False                          # inside a line past MAX_LINE_BYTES

    def feed(self, data: bytes) -> list[dict]:
        """Adds bytes the runner sent; returns the well-formed events in them it accepted."""
        events = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            piece = data[start:nl]
            start = nl + 1
            if self._dropping:  # its test was told when the line passed the cap
                self._dropping = False
                continue
            if self._rest:
                if len(self._rest) + len(piece) > MAX_LINE_BYTES:
                    self._oversized(bytes(self._rest[:2048]),
                                    too_long(len(self._rest) + len(piece)))
                    self._rest.clear()
                    continue
                piece = bytes(self._rest) + piece
                self._rest.clear()
            ev = self._line(piece)
            if ev is not None:
                events.append(ev)
        tail = data[start:]
        if tail and not self._dropping:
            if len(self._rest) + len(tail) > MAX_LINE_BYTES:
                # told now and dropped up to its newline: no copy of it grows at each sample
                self._oversized(bytes(self._rest[:2048]) or tail[:2048],
                                unfinished_problem(MAX_LINE_BYTES))
                self._rest.clear()
                self._dropping = True
            else:
                self._rest += tail
        return events

    def _line(self, line: bytes) -> dict | None:
        problem = line_problem(line)
        if problem is not None:
            self._oversized(line, problem)
            return None
        values = values_in(line)
        over = (self.kept_bytes + len(line) > MAX_RUN_BYTES
                or self.kept_values + values > MAX_RUN_VALUES)
        if over and len(line) > 4096:  # not even parsed: the runner's own lines are short
            self._oversized(line, run_problem(self.kept_bytes + len(line),
                                              self.kept_values + values))
            return None
        try:
            ev = json.loads(line)
        except (ValueError, RecursionError):
            return None
        if not (isinstance(ev, dict) and isinstance(ev.get("ev"), str)):
            return None
        if ev["ev"] in _KEPT:
            if over:
                self._oversized(line, run_problem(self.kept_bytes + len(line),
                                                  self.kept_values + values))
                return None
            if not self._apply(ev):
                return None
            self.kept_bytes += len(line)
            self.kept_values += values
            return ev
        return ev if self._apply(ev) else None

    def _oversized(self, line: bytes, problem: str) -> None:
        name = test_named_in(line)
        if name not in self.tests:  # a test that never started gets no record from a line
            name = self.running
        if name is not None and self.record(name).oversized is None:
            self.record(name).oversized = problem

    def record(self, name: str) -> TestRecord:
        rec = self.tests.get(name)
        if rec is None:
            rec = self.tests[name] = TestRecord(name)
        return rec

    def is_tampered(self, name: str) -> bool:
        return name in self.tampered or len(self.tampered) >= MAX_TAMPERED

    def _tamper(self, *names: str | None) -> None:
        for name in names:
            if name is not None and len(self.tampered) < MAX_TAMPERED:
                self.tampered.add(name)

    def _apply(self, ev: dict) -> bool:
        kind = ev["ev"]
        if kind in ("start", "imported", "collected", "finished"):
            if kind in self._seen:
                return False
            self._seen.add(kind)
        if kind == "start":
            self.started_t = _num(ev.get("t"))
        elif kind == "imported":
            self.import_s, self.imported_t = _num(ev.get("import_s")), _num(ev.get("t"))
            self.import_cpu_s = _num(ev.get("cpu_s"))
        elif kind == "compile_error":
            if self.compile_error is None:
                self.compile_error = _error_fields(ev)
        elif kind == "import_timeout":
            self.import_timeout = True
        elif kind == "collected":
            tests = ev.get("tests")
            if not isinstance(tests, list):
                return False
            self.collected = [t for t in tests if isinstance(t, str)]
        elif kind == "collect_error":
            if len(self.collect_errors) >= MAX_COLLECT_ERRORS:
                return False
            info = _error_fields(ev)
            info["file"] = _str(ev.get("file"), 300)
            self.collect_errors.append(info)
        elif kind in ("test_started", "observation", "trace", "test_finished"):
            name = ev.get("test")
            if not isinstance(name, str) or len(name) > 1000:
                return False
            if not self._in_order(kind, name):
                self._tamper(name, self._open)
                return False
            return self._apply_test(kind, name, ev)
        elif kind == "finished":
            self.finished = {"t": _num(ev.get("t")), "tests_s": _num(ev.get("tests_s")),
                             "torch": _str(ev.get("torch"), 100),
                             "gpu_name": _str(ev.get("gpu_name"), 200)}
        elif kind == "runner_error":
            self.runner_error = _str(ev.get("message")) or "runner error"
        else:
            return False
        return True

    def _in_order(self, kind: str, name: str) -> bool:
        if kind == "test_started":
            rec = self.tests.get(name)
            return (self._open is None and self.collected is not None
                    and name in self.collected and (rec is None or rec.started_t is None))
        return self._open == name

    def _apply_test(self, kind: str, name: str, ev: dict) -> bool:
        rec = self.record(name)
        if kind == "test_started":
            rec.started_t, rec.limit_s = _num(ev.get("t")) or 0.0, _num(ev.get("limit_s"))
            self.order.append(name)
            self._open = name
        elif kind == "observation":
            if self.n_observations >= MAX_OBSERVATIONS:
                return False
            label = ev.get("label")
            if not isinstance(label, str) or "value" not in ev:
                return False
            rec.observations.append({"label": label[:200], "value": ev["value"]})
            self.n_observations += 1
        elif kind == "trace":
            step = _trace_step(ev.get("step"), len(rec.trace))
            if step is None or len(rec.trace) >= MAX_TRACE_STEPS or \
                    self.n_trace_steps >= MAX_TRACE_TOTAL:
                return False
            rec.trace.append(step)
            self.n_trace_steps += 1
        else:
            outcome = ev.get("outcome")
            if outcome not in ("passed", "failed", "error", "skipped", "timeout", "memory"):
                self._tamper(name)
                return False
            info = _error_fields(ev)
            info.update(outcome=outcome, kind=_str(ev.get("kind"), 20),
                        where=_str(ev.get("where"), 300), duration_s=_num(ev.get("duration_s")),
                        cpu_s=_num(ev.get("cpu_s")))
            rec.finished = info
            self._open = None
        return True

    @property
    def running(self) -> str | None:
        """The test that started last and never finished, if any."""
        for name in reversed(self.order):
            if self.tests[name].finished is None:
                return name
        return None


def _trace_step(step, i: int) -> dict | None:
    """One step of a pool's timeline as the judge keeps it, numbered by its place; None when
    it is not one. A step too big to show keeps its call and loses its state."""
    if not isinstance(step, dict) or not isinstance(step.get("op"), str):
        return None
    pool = _int(step.get("pool"))
    out = {"i": i, "pool": pool if pool is not None else 0, "op": step["op"][:50],
           "args": step.get("args"), "result": step.get("result"), "state": step.get("state")}
    if len(json.dumps(out, default=str)) > MAX_STEP_BYTES:
        out["args"] = out["result"] = out["state"] = {"cut": "too long"}
    return out


def _error_fields(ev: dict) -> dict[str, Any]:
    return {"exc_type": _str(ev.get("exc_type"), 200), "message": _str(ev.get("message")),
            "line": _int(ev.get("line")), "traceback": _str(ev.get("traceback"))}
