"""`grade()` of a C++ problem (grader.grade hands it here): the reference's run (cached), the
student's binary built and run in the sandbox, each case judged against the reference's
records (verdicts.py), and the same Report a Python problem gets.

What the student sees of it: the example* cases (the public tests: Run runs them, Submit
counts them too) in full, expected and got; the other cases as passed or not, nothing else.
The program's own output is never shown: its binary holds every case's code, which it could
print. A compile error names the student's line; a sanitizer report is RE at the student's
line. A CUDA problem is graded by cuda_grade.py (nvcc on a GPU, else the CPU emulator; where
neither can, the report says it needs a GPU worker and gives no verdict).
"""

from __future__ import annotations

import hashlib
import logging
import time

from judge.grading import environment as env
from judge.grading.cpp import build as builder
from judge.grading.cpp import sanitizer, toolchain
from judge.grading.cpp.execute import execute
from judge.grading.cpp.reference import ReferenceFailure, reference_cases, sanitize_of
from judge.grading.cpp.verdicts import CaseVerdict, RefCase, judge_run
from judge.grading.platform_error import platform_error_report
from judge.judging.report import Failure, Report, TestResult
from judge.judging.scoring import score_of, scored_suites
from judge.judging.verdict import Verdict, overall
from judge.judging.vocabulary import Event, FailureKind

log = logging.getLogger("judge")
NEEDS_GPU = ("this is a CUDA C++ problem that needs a GPU worker (nvcc and a CUDA device): "
             "it uses what the CPU emulator does not model, and this worker has no GPU with "
             "nvcc, so it gives no verdict")


def grade_native(problem, source: str, *, suite: str, select, reveal_hidden: bool,
                 emit) -> Report:
    if problem.language == "cuda":
        from judge.grading.cpp.cuda_grade import grade_cuda
        return grade_cuda(problem, source, suite=suite, select=select,
                          reveal_hidden=reveal_hidden, emit=emit)
    sanitize = sanitize_of(problem)
    cc = toolchain.find().pick(sanitize)
    if cc is None:
        return platform_error_report(problem, f"no C++ compiler here builds with "
                                              f"-fsanitize={sanitize} (judge doctor)")
    g = _Grading(problem, source, suite, select, reveal_hidden, emit, cc, sanitize)
    return g.guarded()


class _Grading:
    def __init__(self, problem, source, suite, select, reveal_hidden, emit, cc, sanitize):
        self.problem, self.source, self.suite, self.reveal = problem, source, suite, reveal_hidden
        self.select = set(select) if select is not None else None
        self.emit, self.cc, self.sanitize = emit, cc, sanitize
        self.timings: dict = {}
        self.provenance = {"device": "cpu", "gpu_name": None, "python": env.python_version(),
                           "torch": env.torch_version(), "judge_version": env.JUDGE_VERSION,
                           "compiler": cc.version, "sanitize": sanitize,
                           "sandbox_layers": {}, "missing_layers": []}

    def guarded(self) -> Report:
        """run(), with the judge's own failures (a reference that failed, any exception here)
        reported as IE."""
        try:
            return self.run()
        except ReferenceFailure as e:
            return self.internal_error(str(e))
        except Exception as e:  # the judge's own fault
            log.exception("grading %s failed", self.problem.name)
            return self.internal_error(f"{type(e).__name__}: {e}")

    def _reference(self) -> tuple[list[RefCase], bool]:
        return reference_cases(self.problem, self.cc)

    def _build(self):
        return builder.build(self.problem, self.source, "submission", self.cc, self.sanitize,
                             self.problem.native_test_path.read_text(encoding="utf-8"),
                             self.problem.config.native.std)

    def run(self) -> Report:
        t = time.perf_counter()
        ref, cached = self._reference()
        self.timings.update(reference_s=round(time.perf_counter() - t, 4),
                            reference_cached=cached)
        plan = self._plan(ref)
        if not plan:
            raise ValueError(f"no case of {self.problem.name} matches the selection")
        for s in ("public", "hidden"):
            names = [self._name(c.name) for c in plan if self._suite(c.name) == s]
            if names:
                self.emit({"type": Event.SUITE_STARTED, "suite": s, "tests": names})
        t = time.perf_counter()
        b = self._build()
        self.timings.update(compile_s=round(time.perf_counter() - t, 4),
                            compile_cpu_s=round(b.compile_s, 4), compile_cached=b.cached)
        if b.compile_error is not None:
            return self._report(Verdict.CE, self._not_run(plan, FailureKind.COMPILE),
                                compile_error=b.compile_error)
        return self._judge(ref, plan, b)

    def _plan(self, ref: list[RefCase]) -> list[RefCase]:
        wanted = [c for c in ref if self.suite in ("all", self._suite(c.name))]
        if self.select is not None:
            wanted = [c for c in wanted if self._name(c.name) in self.select]
        return wanted

    def _suite(self, case: str) -> str:
        return self.problem.native_suite_of(case)

    def _name(self, case: str) -> str:
        return f"{self._suite(case)}/{self.problem.native_test_path.name}::{case}"

    def _limits(self, ref: list[RefCase]) -> list[float]:
        lim = self.problem.limits
        return [min(lim.cpu_s, max(lim.min_test_s, lim.time_factor * c.cpu_s)) for c in ref]

    def _judge(self, ref: list[RefCase], plan: list[RefCase], b) -> Report:
        t = time.perf_counter()
        limits = self._limits(ref)
        ex = execute(self.problem, b.binary, self.sanitize, limits)
        self.timings["run_s"] = round(time.perf_counter() - t, 4)
        self.timings["run_cpu_s"] = round(ex.result.cpu_s or 0.0, 4)
        self.provenance["sandbox_layers"] = ex.result.layers or {}
        self.provenance["missing_layers"] = ex.result.missing_layers or []
        reports = sanitizer.by_case(ex.stderr)

        def report(i: int) -> str | None:
            found = sanitizer.find(reports.get(i, ""), ex.binary_inside, b.debug, b.user_suffix,
                                   self.source)
            return found.message() if found else None

        return self._finished(judge_run(ref, ex.stream, ex.result, limits, report), plan)

    def _finished(self, verdicts: list[CaseVerdict], plan: list[RefCase]) -> Report:
        """The planned cases' verdicts as the report's tests, each told as an event."""
        wanted = {c.name for c in plan}
        tests = [self._result(v) for v in verdicts if v.name in wanted]
        for r in tests:
            self.emit({"type": Event.TEST_FINISHED, "test": r.name, "verdict": str(r.verdict),
                       "time_s": None if r.hidden else r.time_s})
        for s in ("public", "hidden"):
            if any(r.suite == s for r in tests):
                self.emit({"type": Event.SUITE_FINISHED, "suite": s})
        return self._verdict_of(tests)

    def _verdict_of(self, tests: list[TestResult]) -> Report:
        first = next((r for r in tests if r.verdict.counts and not r.verdict.passed), None)
        verdict = overall([r.verdict for r in tests])
        if first is not None and first.hidden:
            verdict = Verdict.WA  # what ended a hidden case is the submission's to pick
        return self._report(verdict, tests)

    def _result(self, v: CaseVerdict) -> TestResult:
        suite = self._suite(v.name)
        hidden = suite == "hidden" and not self.reveal
        if v.failure is not None:
            v.failure.hidden = hidden
        return TestResult(self._name(v.name), suite, v.verdict, time_s=v.time_s,
                          weight=self.problem.weight(self._name(v.name)), failure=v.failure,
                          observations=v.observations, hidden=hidden)

    def _not_run(self, plan, kind) -> list[TestResult]:
        return [TestResult(self._name(c.name), self._suite(c.name), Verdict.NR,
                           weight=self.problem.weight(self._name(c.name)),
                           hidden=self._suite(c.name) == "hidden" and not self.reveal,
                           failure=Failure(kind)) for c in plan]

    def _report(self, verdict: Verdict, tests: list[TestResult], **kw) -> Report:
        suites = [s for s in ("public", "hidden") if any(t.suite == s for t in tests)]
        scored = scored_suites(suites, examples_count=True)
        score = 0.0 if verdict in (Verdict.CE, Verdict.IE) else score_of(tests, scored)
        return Report(verdict=verdict, score=score,
                      problem={"id": self.problem.id, "slug": self.problem.slug,
                               "version": self.problem.version},
                      submission={"sha256": hashlib.sha256(
                          self.source.encode("utf-8", "surrogatepass")).hexdigest()},
                      tests=tests, timings=self.timings, provenance=self.provenance,
                      scored_suites=list(scored), **kw)

    def internal_error(self, cause: str) -> Report:
        log.error("internal error grading %s: %s", self.problem.name, cause)
        return self._report(Verdict.IE, [], ie_cause=cause)
