"""The per-suite loop, shared by the server (judge/grading/grader.py) and the page
(judge/browser/page_run.py): each test of one suite's run judged once, its verdict sent as it
is decided, and the suite's results for the report.

- While the run goes (the server only), `follow` is the run's event hook: a test is decided at
  its `test_finished` line, and its TEST_FINISHED event goes out then.
- When the run has ended, `finish` decides what is left: tests that never finished (a dead
  child, a stopped run), and every test when the module or a test file did not import (NR) or
  the run itself failed (the judge's fault).

A decided test is kept as it is, unless a fact it was judged on changed after it was decided:
a line about it arrived out of order later (so its own lines did not all come from the runner:
an early `test_finished` forged by the code under test looks like an ordinary end until the
runner's real one comes), a line too big to read named it, the run turned out to have filled
its scratch filesystem, or the run was a first attempt that the wall-clock net stopped and
that was run again. Such a test is judged again, and its new event replaces the one sent: the
last TEST_FINISHED of each test in the stream is always the report's result for it.

A hidden suite's events are held and sent when the suite is over, one TEST_FINISHED per test
(when each test started and ended is the submission's to shape, and a student watches).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from judge.judging.clock import TimeLimits
from judge.judging.concealed import conceal
from judge.judging.report import Failure, TestResult
from judge.judging.run_record import RunRecord
from judge.judging.test_id import TestId
from judge.judging.test_verdict import Context, Redactor, compile_error, judge_test
from judge.judging.verdict import Verdict
from judge.judging.vocabulary import Event, FailureKind

Adjust = Callable[[TestResult, object], TestResult]


@dataclass
class SuiteOutcome:
    tests: list[TestResult]
    compile_error: dict | None = None   # the module or a test file did not import
    internal: str | None = None         # the run failed through the judge's fault


@dataclass
class _Decision:
    result: TestResult
    run: RunRecord
    facts: tuple


@dataclass
class SuiteJudge:
    suite: str
    ref_tests: dict[str, dict]           # {"<suite>/<node>": the reference's entry}, run order
    weight: Callable[[str], float]
    hidden: bool
    source: str
    redact: Redactor
    limits: TimeLimits | None = None
    emit: Callable[[dict], None] | None = None
    on_decided: Callable[[TestResult], None] | None = None  # e.g. stop at the first failure
    _decided: dict[str, _Decision] = field(default_factory=dict)
    _sent: dict[str, dict] = field(default_factory=dict)
    _held: list[dict] = field(default_factory=list)
    _ctx: Context | None = None

    # -- while the run goes -----------------------------------------------------------------

    def follow(self, events: list[dict], run: RunRecord) -> None:
        """The run's event hook: the child's well-formed events, as they arrive."""
        for ev in events:
            node = ev.get("test")
            if not isinstance(node, str):
                continue
            name = TestId(self.suite, node).name
            if name not in self.ref_tests:
                continue
            if ev["ev"] == "test_started":
                self._sent.pop(name, None)  # a rerun shows it running again: tell its end too
                self._say({"type": Event.TEST_STARTED, "test": name})
            elif ev["ev"] == "test_finished":
                self._send(self._decide(name, run, victim=False))

    # -- once it has ended ------------------------------------------------------------------

    def finish(self, run: RunRecord | None, *, blocked: bool = False,
               ignore_files: frozenset[str | None] = frozenset(), adjust: Adjust | None = None
               ) -> SuiteOutcome:
        """The suite's results, in the reference's order, each one sent where it is new.
        `run` None: the suite was never started (grading stopped at an earlier failure).
        `blocked`: an earlier suite did not import, so none of these tests counts (NR).
        `ignore_files`: test files whose import error is not the submission's (the page: a
        module the browser lacks; None is an error that named no file). `adjust(result, record)`
        may change a result at the end."""
        if run is None:
            out = SuiteOutcome([self._stopped(name) for name in self.ref_tests])
        else:
            out = self._final(run, blocked, ignore_files, adjust)
        out.tests = [self._shown(r) for r in out.tests]
        for r in out.tests:
            self._send(r)
        self._flush()
        return out

    def overrule(self, results: list[TestResult]) -> None:
        """The grading as a whole failed after this suite was judged (IE): `results` replace
        what the stream said of its tests."""
        for r in results:
            self._send(self._shown(r))
        self._flush()

    def _final(self, run: RunRecord, blocked: bool, ignore_files: frozenset[str | None],
               adjust: Adjust | None) -> SuiteOutcome:
        log = run.log
        cause = run.sandbox_error or log.runner_error
        internal = f"{self.suite} run: {cause}" if cause else None
        ce = import_failure(run, hidden=self.hidden, source=self.source, redact=self.redact,
                            ignore_files=ignore_files)
        blocked = blocked or ce is not None or internal is not None
        victim = None if run.stopped_early else _victim(run, [TestId.parse(n).node
                                                             for n in self.ref_tests])
        tests = []
        for name, entry in self.ref_tests.items():
            node = TestId.parse(name).node
            rec = log.tests.get(node)
            if blocked:
                r = TestResult(name, self.suite, Verdict.NR, weight=self.weight(name),
                               failure=Failure(FailureKind.NOT_RUN, hidden=self.hidden))
            elif self._settled(name, run):
                r = self._decided[name].result
            elif run.stopped_early and entry["outcome"] != "skipped" and \
                    (rec is None or rec.finished is None):
                r = self._stopped(name)
            else:
                r = self._decide(name, run, victim=node == victim)
            if adjust is not None and not blocked:
                r = adjust(r, rec)
            tests.append(r)
        return SuiteOutcome(tests, ce, internal)

    # -- one test ---------------------------------------------------------------------------

    def _decide(self, name: str, run: RunRecord, *, victim: bool) -> TestResult:
        node = TestId.parse(name).node
        r = self._shown(judge_test(name, self.suite, self.weight(name), self.ref_tests[name],
                                   run.log.tests.get(node), self._context(run), victim=victim))
        self._decided[name] = _Decision(r, run, _facts(run, node))
        if self.on_decided is not None:
            self.on_decided(r)
        return r

    def _shown(self, r: TestResult) -> TestResult:
        """A hidden test's failure as one fixed word (concealed.py); its real one is logged."""
        return conceal(r) if self.hidden else r

    def _settled(self, name: str, run: RunRecord) -> bool:
        """Decided, and nothing it was decided on has changed since."""
        d = self._decided.get(name)
        return d is not None and d.run is run and d.facts == _facts(run, TestId.parse(name).node)

    def _stopped(self, name: str) -> TestResult:
        return TestResult(name, self.suite, Verdict.NR, weight=self.weight(name),
                          failure=Failure(FailureKind.NOT_RUN, hidden=self.hidden, message=(
                              "not run: grading stopped at the first failing test")))

    def _context(self, run: RunRecord) -> Context:
        if self._ctx is None or self._ctx.run is not run:
            self._ctx = Context(run, hidden=self.hidden, source=self.source,
                                redact=self.redact, limits=self.limits, suite=self.suite)
        return self._ctx

    # -- the stream -------------------------------------------------------------------------

    def _send(self, r: TestResult) -> None:
        event = {"type": Event.TEST_FINISHED, "test": r.name, "verdict": str(r.verdict),
                 "time_s": r.to_dict()["time_s"]}
        if self._sent.get(r.name) != event:
            self._sent[r.name] = event
            self._say(event)

    def _say(self, event: dict) -> None:
        if self.hidden:
            self._held.append(event)
        elif self.emit is not None:
            self.emit(event)

    def _flush(self) -> None:
        """The held events, each test's TEST_FINISHED only as it finally is. A hidden suite's
        go out in the reference's order, each test started then finished: which tests the run
        reached, and in what order the judge decided them, are the submission's to steer."""
        last = {e["test"]: i for i, e in enumerate(self._held)
                if e["type"] == Event.TEST_FINISHED}
        held, self._held = self._held, []
        emit = self.emit
        if emit is None:
            return
        if self.hidden:
            final = {e["test"]: e for e in held if e["type"] == Event.TEST_FINISHED}
            for name in (n for n in self.ref_tests if n in final):
                emit({"type": Event.TEST_STARTED, "test": name})
                emit(final[name])
            return
        for i, e in enumerate(held):
            if e["type"] != Event.TEST_FINISHED or last[e["test"]] == i:
                emit(e)


def _facts(run: RunRecord, node: str) -> tuple:
    """What may change about a finished test after its end: see the module's docstring."""
    rec = run.log.tests.get(node)
    return (run.log.is_tampered(node), rec.oversized if rec is not None else None,
            run.disk_exceeded)


def import_failure(run: RunRecord, *, hidden: bool, source: str, redact: Redactor,
                   ignore_files: frozenset[str | None] = frozenset()) -> dict | None:
    """The report's `compile_error` when the module, or a test file importing from it, did not
    import in this run; else None."""
    log = run.log
    errors = [e for e in log.collect_errors if e.get("file") not in ignore_files]
    info = log.compile_error or (errors[0] if errors else None)
    if info is None:
        return None
    context = "" if log.compile_error else \
        f"a test file ({info.get('file')}) could not import from your module: "
    return compile_error(info, hidden=hidden, source=source, redact=redact, context=context)


def _victim(run: RunRecord, nodes: list[str]) -> str | None:
    """The test charged with the child's abnormal end: the one in progress; else, when the
    child died before any test or between tests, the next one; none when the runner itself
    ended the run after a test's own timeout (the rest are then "not run")."""
    log = run.log
    if log.running is not None:
        return log.running
    if log.finished is not None and not run.died:
        return None
    if log.order and (log.tests[log.order[-1]].outcome == "timeout"):
        return None
    return next((n for n in nodes if n not in log.tests or log.tests[n].started_t is None),
                None)
