"""One test's verdict: what the child said about it, held against the reference's observations.

Rules, in the order the events happened inside the test:
- lines about the test reached the parent out of order (child_log.py: forged) -> WA;
- an observation that differs from the reference's (label, value) -> WA at the first one;
- then how the test ended: passed -> AC if the stream matches in full (counts too) else WA;
  timeout -> TLE; MemoryError -> MLE; an exception with a frame in the submission -> RE;
  a failed assert, a non-JSON observation or another error in the test's own code -> WA;
  skipped by the submission (but not by the reference) -> WA;
- the child died during the test -> TLE / MLE / OLE (the sandbox's flags) or RE;
- it raised "No space left on device" and the parent saw the run's scratch filesystem full
  -> OLE (disk quota), as when the parent stopped the run for it during the test;
- the test never started because the child died earlier, or the suite used up its CPU budget
  (clock.py) -> NR (counts as failed);
- whatever the child said, a test for which the parent measured more CPU time than its limit
  (plus the grace the parent allows before it stops a run) -> TLE.

Times are CPU seconds (clock.py). A run stopped by the wall-clock net was run twice before it
gets here (suite_run.py), so the TLE it gives says that the code waited rather than computed.

For hidden tests only the verdict, the kind of failure (a fixed word) and the reference's label
leave this module: no time, no count of observations, no exception name or line number, since
the submission could choose any of those to spell out what it read in the hidden tests. For
public tests, text the child produced is shown after `Redactor` removed any line of the hidden
tests or of the reference solution. A test whose lines came out of order (child_log.py) fails.
"""

from __future__ import annotations

import json
import re
import signal as _signal

from judge.judging.bounded import SCRATCH_FILES, SCRATCH_MB, finite, shown
from judge.judging.clock import GRACE_S, TimeLimits, shown_cpu_s, wall_net
from judge.judging.compare import compare, trace_diff
from judge.judging.report import Failure, TestResult
from judge.judging.run_record import RunRecord
from judge.judging.test_id import TestId
from judge.judging.verdict import Verdict
from judge.judging.vocabulary import FailureKind as K

MIN_SECRET = 20


class Redactor:
    """Removes from public text any line of the secret files (hidden tests, the reference
    solution) that is not also in a file the student can see."""

    def __init__(self, secret_texts: list[str], visible_texts: list[str]):
        visible = {ln.strip() for t in visible_texts for ln in t.splitlines()}
        self.secrets = sorted({ln.strip() for t in secret_texts for ln in t.splitlines()
                               if len(ln.strip()) >= MIN_SECRET} - visible, key=len, reverse=True)

    def __call__(self, text):
        if not isinstance(text, str) or not text:
            return text
        for s in self.secrets:
            if s in text:
                text = text.replace(s, "[redacted]")
        return text


class Context:
    """What judging a suite's tests needs besides the test itself."""

    def __init__(self, run: RunRecord, *, hidden: bool, source: str, redact: Redactor,
                 limits: TimeLimits | None, suite: str = ""):
        self.run, self.hidden, self.redact, self.suite = run, hidden, redact, suite
        self.limits = limits or None
        self.clock = run.clock
        self.n_lines = source.count("\n") + 1

    def limit(self, node: str) -> float | None:
        return self.limits.for_test(node) if self.limits else None

    def exc_type(self, name):
        return None if self.hidden else name

    def line(self, n):
        if self.hidden:
            return None
        return n if isinstance(n, int) and 1 <= n <= self.n_lines else None

    def text(self, s):
        return None if self.hidden else self.redact(s)

    def step(self, step: dict) -> dict:
        """A step of the submission's timeline, its contents gone if they carry a secret line."""
        text = json.dumps(finite(step), ensure_ascii=False, default=str)
        if self.redact(text) == text:
            return step
        return {**step, "args": "[redacted]", "result": "[redacted]", "state": "[redacted]"}

    def value(self, v):
        """A value the submission produced, unless it carries a secret line."""
        text = json.dumps(finite(v), ensure_ascii=False, default=str)
        return shown(v) if self.redact(text) == text else "[redacted]"


def death(run: RunRecord) -> tuple[Verdict, K, str]:
    """(verdict, failure kind, message) for a child that ended during a test."""
    clock = run.clock
    if run.log.import_timeout:
        limit = f" ({clock.limits.import_s:.1f}s)" if clock else ""
        return Verdict.TLE, K.TIMEOUT, ("importing your module used more CPU time than its "
                                        f"limit{limit}")
    if run.timed_out:
        return Verdict.TLE, K.TIMEOUT, _stopped(run, clock.stopped if clock else None)
    if run.memory_exceeded:
        return Verdict.MLE, K.MEMORY, "the run reached its memory limit during this test"
    if run.output_exceeded:
        return Verdict.OLE, K.OUTPUT, "the run printed more than its output limit"
    if run.disk_exceeded:
        return Verdict.OLE, K.DISK, (
            f"the run filled its scratch space (disk quota: {SCRATCH_MB} MiB in at most "
            f"{SCRATCH_FILES:,} files and folders) during this test")
    if run.signal in (_signal.SIGXCPU,):
        return Verdict.TLE, K.TIMEOUT, ("a process of the run used up the CPU time the whole "
                                        "suite may take, during this test")
    if run.signal:
        try:
            sig = _signal.Signals(run.signal).name
        except ValueError:
            sig = str(run.signal)
        return Verdict.RE, K.CRASH, f"the process was killed by {sig} during this test"
    return Verdict.RE, K.CRASH, (f"the process exited (status {run.returncode}) during this "
                                 "test")


def _stopped(run: RunRecord, stop) -> str:
    """Why the parent stopped a run, for the test it was in (or was about to start)."""
    if stop is None:
        if run.timeout_kind == "cpu":
            return "the run used more CPU time than the whole suite may take, during this test"
        return ("the whole suite ran past its wall-clock safety net during this test "
                f"(on {_runs(run)}), though within its CPU time limit")
    where = {"import": "importing your module",
             "gap": "outside any test, before this test started"}.get(stop.phase, "this test")
    if stop.kind == "cap":
        return (f"the grading used up its wall-clock time ({stop.limit_s:.0f}s left of its CPU "
                "time budget plus a margin) while it waited (sleeping, or blocked) rather "
                "than computed; a run that waits is not run again")
    if stop.kind == "budget":
        when = {"import": "while importing your module",
                "gap": "outside any test, before this test started"}.get(stop.phase,
                                                                          "during this test")
        return (f"the whole suite used up its CPU time budget ({stop.limit_s:.1f}s: twice what "
                f"the reference needs for it, plus a margin) {when}")
    if stop.kind == "cpu":
        return f"{where} used more CPU time than its limit ({stop.limit_s:.1f}s)"
    used = stop.used.cpu_s or 0.0
    return (f"the wall-clock safety net stopped {where} on {_runs(run)}: {where} took over "
            f"{wall_net(stop.limit_s):.0f}s (not counting time spent waiting for a busy CPU) "
            f"but used only {used:.1f}s of CPU time (limit {stop.limit_s:.1f}s), so it was "
            "waiting (sleeping, or blocked on a lock or on input), not computing" +
            ("" if run.attempts > 1 else "; a run that waits is not run again"))


def _runs(run: RunRecord) -> str:
    return "both runs" if run.attempts > 1 else "its run"


def judge_test(name: str, suite: str, weight: float, ref: dict, rec, ctx: Context,
               *, victim: bool) -> TestResult:
    """`ref`: the reference's {outcome, observations, time_s, trace}; `rec`: the child's
    TestRecord or None; `victim`: this test was the one in progress (or next) when the child
    died. A failing public test that traced a pool gets both timelines (compare.trace_diff);
    a hidden test never does."""
    res = _judge(name, suite, weight, ref, rec, ctx, victim=victim)
    if res.failure is not None and res.failure.kind != K.TAMPERED and not ctx.hidden and \
            rec is not None and (ref.get("trace") or rec.trace):
        res.failure.trace = trace_diff(ref.get("trace") or [], rec.trace)
        res.failure.trace["got"] = [ctx.step(s) for s in res.failure.trace["got"]]
    return res


def _judge(name: str, suite: str, weight: float, ref: dict, rec, ctx: Context,
           *, victim: bool) -> TestResult:
    res = TestResult(name=name, suite=suite, verdict=Verdict.AC, weight=weight,
                     hidden=ctx.hidden)
    if ref["outcome"] == "skipped":
        res.verdict = Verdict.SKIP
        return res
    node = TestId.parse(name).node
    if _unran(res, node, rec, ctx, victim):
        return res
    fin = rec.finished
    res.observations = len(rec.observations)
    measured = ctx.clock.tests.get(node) if ctx.clock else None
    res.time_s = shown_cpu_s(fin.get("cpu_s") if fin else None, measured)
    if res.time_s is None:  # no CPU measurement on this host: the wall clock, within the run's
        res.time_s = _elapsed(rec, ctx.run)
    passed = fin is not None and fin["outcome"] == "passed"
    if _observed_wrong(res, ref, rec, ctx, passed):
        return res
    if fin is None:
        v, kind, msg = death(ctx.run)
        res.verdict, res.failure = v, Failure(kind, message=msg, hidden=ctx.hidden)
        return res
    limit = ctx.limit(node)
    # over_limit means the clock measured this test, so `measured` is there
    if ctx.clock is not None and measured is not None and ctx.clock.over_limit(node) and \
            fin["outcome"] != "timeout":
        res.verdict = Verdict.TLE
        res.failure = Failure(K.TIMEOUT, hidden=ctx.hidden, message=(
            f"the test used {measured.cpu_s:.1f}s of CPU time as the judge measured it; its "
            f"limit is {ctx.clock.limits.for_test(node):.1f}s (and {GRACE_S:.1f}s of grace)"))
        return res
    if not passed:
        _failed(res, fin, limit, ctx)
    return res


def _unran(res: TestResult, node: str, rec, ctx: Context, victim: bool) -> bool:
    """True where the test has no run of its own to judge (``res`` then says why): its lines
    were forged, or it never started (the process it was in died, or time ran out first)."""
    if ctx.run.log.is_tampered(node):
        res.verdict = Verdict.WA
        res.failure = Failure(K.TAMPERED, hidden=ctx.hidden, message=(
            "lines about this test reached the judge out of order, so they did not all come "
            "from its test runner (did the code under test write them?)"))
        return True
    if rec is not None and rec.started_t is not None:
        return False
    if victim:
        v, kind, msg = death(ctx.run)
        res.verdict, res.failure = v, Failure(kind, message=msg, hidden=ctx.hidden)
    else:
        res.verdict = Verdict.NR
        stop = ctx.clock.stopped if ctx.clock else None
        res.failure = Failure(K.NOT_RUN, hidden=ctx.hidden, message=(
            "not run: the suite had used up its CPU time budget" if stop is not None
            and stop.kind == "budget" else "not run: the grading had used up its "
            "wall-clock time" if stop is not None and stop.kind == "cap" else
            "not run: the process had ended"))
    return True


def _observed_wrong(res: TestResult, ref: dict, rec, ctx: Context, passed: bool) -> bool:
    """True where what the test showed is wrong (``res`` says how): too much of it, or
    observations that part from the reference's."""
    if rec.oversized:
        res.verdict = Verdict.OLE
        res.failure = Failure(K.OUTPUT, hidden=ctx.hidden, message=ctx.text(rec.oversized))
        return True
    div = compare(ref["observations"], rec.observations, partial=not passed)
    if div is None:
        return False
    res.verdict = Verdict.WA
    label = div.label if div.reason != "extra" or not ctx.hidden else "(an extra observation)"
    res.failure = Failure(K.OBSERVATION, label=label, hidden=ctx.hidden, index=div.index,
                          expected=None if ctx.hidden else shown(div.expected),
                          got=None if ctx.hidden else ctx.value(div.got),
                          path=None if ctx.hidden else div.path,
                          message=ctx.text(div.describe()))
    return True


def _failed(res: TestResult, fin: dict, limit: float | None, ctx: Context) -> None:
    """The verdict of a test that finished and did not pass, from how its runner says it
    ended."""
    outcome, kind = fin["outcome"], fin.get("kind")
    if outcome == "skipped":
        res.verdict = Verdict.WA
        res.failure = Failure(K.SKIPPED, message="the test was skipped; the reference ran it",
                              hidden=ctx.hidden)
        return
    if outcome == "timeout" or kind == "timeout":
        res.verdict = Verdict.TLE
        res.failure = Failure(K.TIMEOUT, hidden=ctx.hidden, message=(
            f"the test used more CPU time than its limit ({limit:.1f}s)" if limit else
            "the test used more CPU time than its limit"))
        return
    if ctx.run.disk_exceeded and _no_space(fin):
        # the parent saw the run's scratch filesystem full; the test that hit it is named by
        # the error it raised (the child's word picks the test, not the verdict)
        v, fkind, msg = death(ctx.run)
        res.verdict, res.failure = v, Failure(fkind, message=msg, hidden=ctx.hidden)
        return
    if outcome == "memory" or kind == "memory":
        res.verdict, fkind = Verdict.MLE, K.MEMORY
    elif kind == "student":
        res.verdict, fkind = Verdict.RE, K.EXCEPTION
    elif kind in ("assertion", "observe", "test"):
        res.verdict, fkind = Verdict.WA, K.ASSERTION if kind == "assertion" else K.EXCEPTION
    else:
        res.verdict, fkind = Verdict.RE, K.EXCEPTION
    res.failure = Failure(fkind, hidden=ctx.hidden, exc_type=ctx.exc_type(fin.get("exc_type")),
                          line=ctx.line(fin.get("line")), where=ctx.text(fin.get("where")),
                          message=ctx.text(fin.get("message")),
                          traceback=ctx.text(fin.get("traceback")))


def _no_space(fin: dict) -> bool:
    msg = fin.get("message") or ""
    return "[Errno 28]" in msg or "No space left on device" in msg


def _elapsed(rec, run: RunRecord) -> float | None:
    """The test's wall time as far as the parent can bound it: from its start (the child's
    clock) to its end (ditto) or the run's, never more than the whole run."""
    fin = rec.finished or {}
    d = fin.get("duration_s")
    if d is None and rec.started_t:
        d = run.spawn_t + run.wall_s - rec.started_t
    return None if d is None else min(max(0.0, d), float(run.wall_s or 0.0))


def compile_error(info: dict, *, hidden: bool, source: str, redact: Redactor,
                  context: str = "") -> dict:
    """The report's `compile_error` from a child's compile_error / collect_error fields."""
    n_lines = source.count("\n") + 1
    line = info.get("line")
    line = line if isinstance(line, int) and 1 <= line <= n_lines else None
    exc = info.get("exc_type")
    if hidden:  # nothing the submission could choose: not even the exception or the line
        return {"exc_type": None, "line": None,
                "message": "your module failed to import while the hidden tests ran",
                "traceback": None}
    msg = redact(info.get("message"))
    missing = _NOT_DEFINED.search(str(info.get("message") or ""))
    if missing:  # a test's `from tiered import X` on a file without X: say that, not pytest's text
        return {"exc_type": "ImportError", "line": None,
                "message": f"the file does not define {missing.group(1)}",
                "traceback": redact(info.get("traceback"))}
    return {"exc_type": exc, "line": line, "message": f"{context}{msg}" if context else msg,
            "traceback": redact(info.get("traceback"))}


_NOT_DEFINED = re.compile(r"ImportError: cannot import name '(\w+)' from '\w+'")
