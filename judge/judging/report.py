"""The result of one grading: per-test results, the verdict, the score, timings, provenance.
`Report.to_dict()` is the JSON every front end shows (schema_version 1).

Per-test verdicts are the overall ones (AC WA RE TLE MLE OLE) plus NR (not run: the child died
before the test started; counts as failed) and SKIP (skipped by the reference too; not scored).

A hidden test carries only whether it passed: a failed one is `WA` with the failure kind
"failed" and nothing else (no label, time, count of observations, exception type or line), since
the submission could pick any of those to spell out the hidden tests (concealed.py). The
per-suite loop conceals them before anything is sent or stored, and `to_dict` conceals them
again, so nothing else can leak through a front end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from judge.judging.bounded import MAX_REPORT_BYTES, finite, shown, strict_dumps
from judge.judging.compare import cut_trace
from judge.judging.hints import matching_hints
from judge.judging.verdict import Verdict

SCHEMA_VERSION = 1
HIDDEN_FIELDS = ("kind", "label", "exc_type", "line")
HIDDEN_KIND = "failed"  # FailureKind.FAILED (vocabulary.py imports this module's room)


@dataclass
class Failure:
    kind: str                     # a FailureKind (vocabulary.py): its values are the wire's
    label: str | None = None      # the observation's label (from the reference)
    expected: Any = None
    got: Any = None
    path: str | None = None       # where in the value: "[2]['k']"
    index: int | None = None      # which observation (0-based)
    exc_type: str | None = None
    line: int | None = None       # line in the submission file
    where: str | None = None      # file:line in the test file (public only)
    message: str | None = None
    traceback: str | None = None
    trace: dict | None = None     # public only: both pool timelines (compare.trace_diff)
    hidden: bool = False

    def to_dict(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k != "hidden"}
        if self.hidden:  # the keys stay (front ends read them), the values the student chose go
            d = {k: HIDDEN_KIND if k == "kind" else None for k in HIDDEN_FIELDS}
        return d


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class

    name: str
    suite: str
    verdict: Verdict
    time_s: float | None = None
    weight: float = 1.0
    failure: Failure | None = None
    observations: int = 0         # how many the submission recorded
    hidden: bool = False          # a hidden test shown to a student: time and count stay here

    def to_dict(self) -> dict:
        shown = not self.hidden
        verdict = self.verdict  # concealed.py made a hidden failure WA; NR is a whole CE/IE
        if not shown and verdict in (Verdict.RE, Verdict.TLE, Verdict.MLE, Verdict.OLE):
            verdict = Verdict.WA
        return {"name": self.name, "suite": self.suite, "verdict": str(verdict),
                "time_s": None if self.time_s is None or not shown else round(self.time_s, 4),
                "weight": self.weight, "observations": self.observations if shown else None,
                "failure": self.failure.to_dict() if self.failure else None}


@dataclass
class Report:
    verdict: Verdict
    score: float
    problem: dict
    submission: dict
    tests: list[TestResult] = field(default_factory=list)
    compile_error: dict | None = None
    timings: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    output: str | None = None      # the tail of what the public run printed (public only)
    scored_suites: list = field(default_factory=list)  # whose tests the score counts
    experiment: dict | None = None  # the chapter's experiment, for a chart (experiment.py)
    ie_cause: str | None = None    # why the judge failed: logged and for instructors, never
    #                                 part of to_dict()
    platform_error: str | None = None  # why the platform could not grade at all (shown)
    hint_source: list = field(default_factory=list)  # the problem's hints (hints.toml); the
    #                                 report shows those its first failure meets (hints.py)

    @property
    def first_failure(self) -> dict | None:
        for t in self.tests:
            if t.verdict.counts and not t.verdict.passed and t.verdict is not Verdict.NR:
                d = {"test": t.name, "verdict": t.to_dict()["verdict"]}
                d.update(t.failure.to_dict() if t.failure else {})
                return d
        if self.platform_error is not None:
            return {"test": None, "verdict": str(self.verdict),
                    **Failure("internal", message=self.platform_error).to_dict()}
        return None

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.AC

    def to_dict(self) -> dict:
        """Strict JSON (no NaN or Infinity), at most `MAX_REPORT_BYTES` once encoded."""
        return _fit(finite(self._fields()))

    def _fields(self) -> dict:
        return {
            "schema_version": SCHEMA_VERSION,
            "verdict": str(self.verdict),
            "score": round(self.score, 6),
            "scored_suites": list(self.scored_suites),
            "problem": dict(self.problem),
            "submission": dict(self.submission),
            "tests": [t.to_dict() for t in self.tests],
            "first_failure": self.first_failure,
            "compile_error": self.compile_error,
            "internal_error": "internal error" if self.verdict is Verdict.IE else None,
            "output": self.output,
            "timings": dict(self.timings),
            "provenance": dict(self.provenance),
            "experiment": self.experiment,
            "hints": matching_hints(self.hint_source, self.first_failure),
        }


def _fit(d: dict) -> dict:
    """Cut what a submission can make long (its output, tracebacks, the values it produced)
    until the encoded report fits; the verdicts, names and labels stay whole."""
    if len(strict_dumps(d)) <= MAX_REPORT_BYTES:
        return d
    failures = [t["failure"] for t in d["tests"] if t.get("failure")]
    failures += [d["first_failure"]] if d.get("first_failure") else []
    traces = [f["trace"] for f in failures if isinstance(f.get("trace"), dict)]
    for keep in (50, 20, 5, 1):  # older steps first: the ones where the timelines part stay
        for trace in traces:
            cut_trace(trace, keep)
        if traces and len(strict_dumps(d)) <= MAX_REPORT_BYTES:
            return d
    for limit in (2000, 300):
        if d.get("output"):
            d["output"] = d["output"][-limit:]
        failures = [t["failure"] for t in d["tests"] if t.get("failure")]
        failures += [d["first_failure"]] if d.get("first_failure") else []
        for f in failures + ([d["compile_error"]] if d.get("compile_error") else []):
            for key in ("expected", "got"):
                if key in f and f[key] is not None:
                    f[key] = shown(f[key], limit)
            for key in ("traceback", "message"):
                if isinstance(f.get(key), str):
                    f[key] = f[key][-limit:]
        if len(strict_dumps(d)) <= MAX_REPORT_BYTES:
            return d
    for f in failures:
        if "trace" in f:
            f["trace"] = None
    d["output"] = None
    return d
