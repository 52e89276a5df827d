"""`grade(problem, source) -> Report`: the one entry point every front end calls.

1. The submission must compile (checked here, without running it) -> else CE.
2. The reference's observations for this problem version and device (cached on disk).
3. Each suite (public, then hidden) runs in its own sandboxed child over a fresh copy of the
   files it may see; the parent follows the results its runner sends and emits progress events.
4. Each test is judged against the reference outside both processes (test_verdict.py); the overall
   verdict, the score, timings and provenance make the Report.
Anything unexpected in the judge itself gives IE ("internal error"): the cause is logged and
kept in `report.ie_cause`, never shown to the student.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import replace
from typing import Callable, Iterable

from judge.config import settings
from judge.grading import environment as env
from judge.grading.experiment import report_experiment
from judge.grading.reference_cache import ReferenceCache, ReferenceFailure, get_reference
from judge.grading.shards import run_hidden
from judge.grading.suite_run import run_suite
from judge.grading.workdir import View
from judge.judging.clock import TimeLimits, grading_cap
from judge.judging.concealed import hidden_overall
from judge.judging.report import Failure, Report, TestResult
from judge.judging.run_record import RunRecord
from judge.judging.scoring import log_hidden_timings, score_of, scored_suites, suite_timings
from judge.judging.suite_judge import SuiteJudge, SuiteOutcome
from judge.judging.syntax import check as syntax_check
from judge.judging.test_id import TestId
from judge.judging.test_verdict import Redactor
from judge.judging.verdict import Verdict, overall
from judge.judging.vocabulary import Event, FailureKind
from judge.problem import SUITES, Problem, ProblemError, load_problem

log = logging.getLogger("judge")


class _Emitter:
    """Hands events to the front end's callback, one at a time. A test's TEST_FINISHED can come
    twice: the second replaces the first (suite_judge.py says when)."""

    def __init__(self, on_event: Callable[[dict], None] | None):
        self.on_event, self.lock = on_event, threading.Lock()

    def __call__(self, event: dict) -> None:
        if self.on_event is None:
            return
        with self.lock:
            try:
                self.on_event(event)
            except Exception:  # a front end's bug must not fail the grading
                log.exception("on_event callback failed")


def _parallel_default() -> bool:
    return settings().parallel


def grade(problem: Problem | str, source: str, *, suite: str = "all", device: str = "auto",
          on_event: Callable[[dict], None] | None = None, select: Iterable[str] | None = None,
          reveal_hidden: bool = False, cache: ReferenceCache | None = None,
          parallel: bool | None = None, stop_at_first_failure: bool = False) -> Report:
    """Grades `source` (the student's `<module>.py`) on `problem`.

    suite: "public" | "hidden" | "all". device: "auto" | "cpu" | "cuda".
    select: only these test names (e.g. the examples); all when None.
    reveal_hidden: show hidden tests' details (instructors' `judge check`; never students).
    stop_at_first_failure: only "AC or not" matters (`judge check --mutate`): the suites run
    one after the other, each test cheapest first by the reference's CPU time, and grading
    stops at the first failing test; every test not run then is NR.
    Raises ValueError for a bad suite/device/selection; everything else becomes a Report.
    """
    t0 = time.perf_counter()
    problem = load_problem(problem)
    if suite not in ("public", "hidden", "all"):
        raise ValueError(f"suite must be public, hidden or all, not {suite!r}")
    if problem.language != "python":  # C++ and CUDA C++: built, run, judged in grading/cpp/
        return _native(problem, source, suite, select, reveal_hidden, _Emitter(on_event), t0)
    device = env.resolve_device(device)
    wanted = set(select) if select is not None else None
    plan = {s: [t for t in problem.tests(s) if wanted is None or t.name in wanted]
            for s in (SUITES if suite == "all" else (suite,))}
    plan = {s: ts for s, ts in plan.items() if ts or wanted is None}
    if wanted is not None and not any(plan.values()):
        raise ValueError(f"no test of {problem.name} matches the selection")
    g = _Grading(problem, source, plan, device, _Emitter(on_event), reveal_hidden,
                 cache or ReferenceCache(), _parallel_default() if parallel is None else parallel,
                 fail_fast=stop_at_first_failure)
    try:
        report = g.run()
    except Exception as exc:  # the judge's own fault
        log.exception("grading %s failed", problem.name)
        report = g.internal_error(f"{type(exc).__name__}: {exc}")
    report.timings["total_s"] = round(time.perf_counter() - t0, 4)
    g.emit({"type": Event.DONE, "verdict": str(report.verdict), "score": report.score})
    return report


def _native(problem, source, suite, select, reveal_hidden, emit, t0) -> Report:
    from judge.grading.cpp import grade_native

    report = grade_native(problem, source, suite=suite, select=select,
                          reveal_hidden=reveal_hidden, emit=emit)
    report.timings["total_s"] = round(time.perf_counter() - t0, 4)
    emit({"type": Event.DONE, "verdict": str(report.verdict), "score": report.score})
    return report


class _Grading:
    def __init__(self, problem, source, plan, device, emit, reveal_hidden, cache, parallel,
                 fail_fast=False):
        self.problem, self.source, self.plan, self.device = problem, source, plan, device
        self.emit, self.reveal_hidden, self.cache, self.parallel = (emit, reveal_hidden, cache,
                                                                    parallel)
        self.timings: dict = {}
        self.provenance = {"device": device, "gpu_name": None, "python": env.python_version(),
                           "torch": env.torch_version(), "judge_version": env.JUDGE_VERSION,
                           "sandbox_layers": {}, "missing_layers": [], "reference_cache": None}
        self._redactor: Redactor | None = None
        self.output: str | None = None
        self.fail_fast = fail_fast
        self.stop = threading.Event()  # fail_fast: set at the first failing test
        self.judges: list[SuiteJudge] = []

    # -- report skeletons -------------------------------------------------------------------

    def _report(self, verdict: Verdict, tests: list[TestResult], **kw) -> Report:
        scored = scored_suites((suite for suite, ts in self.plan.items() if ts),
                               examples_count=self.problem.config.source is not None)
        score = score_of(tests, scored)
        if verdict in (Verdict.CE, Verdict.IE):
            score = 0.0
        return Report(verdict=verdict, score=score,
                      problem={"id": self.problem.id, "slug": self.problem.slug,
                               "version": _safe_version(self.problem)},
                      submission={"sha256": hashlib.sha256(
                          self.source.encode("utf-8", "surrogatepass")).hexdigest()},
                      tests=tests, timings=self.timings, provenance=self.provenance,
                      scored_suites=list(scored), hint_source=_safe_hints(self.problem), **kw)

    def _not_run(self, kind: FailureKind = FailureKind.NOT_RUN) -> list[TestResult]:
        # the whole grading failed before or around the runs (CE, IE): nothing a hidden run
        # did, so its tests stay NR (concealed.py conceals what a run decided)
        return [TestResult(t.name, s, Verdict.NR, weight=t.weight, hidden=self._hidden(s),
                           failure=Failure(kind, hidden=self._hidden(s)))
                for s, ts in self.plan.items() for t in ts]

    def internal_error(self, cause: str) -> Report:
        log.error("internal error grading %s: %s", self.problem.name, cause)
        tests = self._not_run()
        for judge in self.judges:  # what the stream said of each test is replaced too
            judge.overrule([t for t in tests if t.suite == judge.suite])
        return self._report(Verdict.IE, tests, ie_cause=cause)

    def _hidden(self, suite: str) -> bool:
        return suite == "hidden" and not self.reveal_hidden

    @property
    def redact(self) -> Redactor:
        if self._redactor is None:
            p = self.problem
            secret = [f.read_text("utf-8", "replace") for f in _files(p.suite_dir("hidden"))]
            secret.append(p.reference_path.read_text("utf-8", "replace"))
            visible = [f.read_text("utf-8", "replace") for f in _files(p.suite_dir("public"))]
            visible += [self.source, p.starter_source if p.starter_path.is_file() else ""]
            visible += [h.read_text("utf-8", "replace") for h in p.handbook_paths if h.is_file()]
            self._redactor = Redactor(secret, visible)
        return self._redactor

    # -- the steps --------------------------------------------------------------------------

    def run(self) -> Report:
        ce = self._syntax_check()
        if ce is not None:
            return self._report(Verdict.CE, self._not_run(FailureKind.COMPILE), compile_error=ce)
        t = time.perf_counter()
        try:
            ref, cached = get_reference(self.problem, list(self.plan), self.device,
                                        cache=self.cache, parallel=self.parallel)
        except ReferenceFailure as exc:
            return self.internal_error(str(exc))
        self.timings["reference_s"] = round(time.perf_counter() - t, 4)
        self.timings["reference_cached"] = cached
        self.provenance["reference_cache"] = "hit" if cached else "miss"
        ref_tests = self._reference_plan(ref)
        limits = {s: TimeLimits.from_reference(self.problem.limits, ref[s], ref_tests[s])
                  for s in ref_tests}
        for s, names in ref_tests.items():
            self.emit({"type": Event.SUITE_STARTED, "suite": s, "tests": list(names)})
        t = time.perf_counter()
        runs: dict[str, RunRecord] = {}
        outcomes: dict[str, SuiteOutcome] = {}
        self.timings["compare_s"] = 0.0
        with View(self.problem) as view:
            sub = view.submission("student", self.source)
            self.timings["prepare_s"] = round(time.perf_counter() - t, 4)
            # the whole grading's wall clock (less waiting for a CPU) is its CPU budgets and an
            # allowance, however many phases the submission's sleeps are spread over
            cap, spent = grading_cap(limits), 0.0
            # one suite after the other: the public run ends before the hidden one starts, so
            # nothing the hidden run can touch (free space, load, timing) reaches its output
            for s in (s for s in ref_tests if ref_tests[s]):  # a problem may have no hidden tests
                skip = self.fail_fast and (self.stop.is_set() or any(
                    _ended_badly(r) for r in runs.values()))
                blocked = any(o.compile_error is not None or o.internal is not None
                              for o in outcomes.values())
                left = replace(limits[s], wall_cap_s=max(1.0, cap - spent))
                run, outcomes[s] = self._suite(view, sub, s, left, ref_tests[s],
                                               skip=skip, blocked=blocked)
                if run is not None:
                    runs[s] = run
                    spent += run.wall_s - (run.wait_s or 0.0)
        return self._judge(runs, outcomes, ref_tests)

    def _syntax_check(self) -> dict | None:
        # This interpreter's own parser is the truth (the sandboxed children run it too); the
        # page checks the same file with the same module against this version's grammar.
        return syntax_check(self.source, f"{self.problem.module}.py")

    def _reference_plan(self, ref: dict) -> dict[str, dict[str, dict]]:
        """{suite: {test name: reference entry}} for the selected tests, in run order."""
        out = {}
        for s, tests in self.plan.items():
            wanted = {t.name for t in tests}
            out[s] = {e["name"]: e for e in ref[s]["tests"]
                      if e["name"] in wanted or TestId.parse(e["name"]).base_name in wanted}
        return out

    def _targets(self, suite: str, ref_tests: dict) -> list[str]:
        every = {t.name for t in self.problem.tests(suite)}
        if self.fail_fast:
            return _cheapest_first(ref_tests)
        if {t.name for t in self.plan[suite]} == every:
            return [f.name for f in self.problem.test_files(suite)]
        return [t.node for t in self.plan[suite]]

    def _suite(self, view, sub, suite: str, limits: TimeLimits, ref_tests: dict, *,
               skip: bool, blocked: bool) -> tuple[RunRecord | None, SuiteOutcome]:
        """Runs one suite (unless `skip`: grading stopped at an earlier failure) and judges
        it, each test once, as its results come in (suite_judge.py)."""
        judge = SuiteJudge(suite, ref_tests, weight=self.problem.weight,
                           hidden=self._hidden(suite), source=self.source, redact=self.redact,
                           limits=limits, emit=self.emit,
                           on_decided=self._stop_at_failure if self.fail_fast else None)
        self.judges.append(judge)
        run = None
        if not skip:
            how = run_hidden if suite == "hidden" else run_suite  # shards.py: N at once
            extra = {"ref_tests": ref_tests, "fail_fast": self.fail_fast,
                     "runner": run_suite} if how is run_hidden else {}
            run = how(self.problem, view, run=f"student-{suite}", suite=suite,
                      submission=sub, targets=self._targets(suite, ref_tests),
                      limits=limits, device=self.device,
                      on_events=judge.follow if self.emit.on_event or self.fail_fast
                      else None, stop=self.stop if self.fail_fast else None, **extra)
        t = time.perf_counter()
        outcome = judge.finish(run, blocked=blocked)
        self.timings["compare_s"] = round(self.timings["compare_s"] + time.perf_counter() - t, 4)
        if run is not None:
            self.emit({"type": Event.SUITE_FINISHED, "suite": suite})
        return run, outcome

    def _stop_at_failure(self, r: TestResult) -> None:
        if r.verdict.counts and not r.verdict.passed:
            self.stop.set()

    def _judge(self, runs: dict[str, RunRecord], outcomes: dict[str, SuiteOutcome],
               ref_tests: dict) -> Report:
        tests: list[TestResult] = []
        ce = internal = None
        for suite, outcome in outcomes.items():
            tests += outcome.tests
            if outcome.compile_error is not None and self._hidden(suite):
                # a module that imports for the public run but not for the hidden one chose
                # to: its hidden tests are failed (concealed.py), the import error is logged
                log.info("%s: the hidden run did not import: %s", self.problem.name,
                         outcome.compile_error.get("message"))
            else:
                ce = ce or outcome.compile_error
            internal = internal or outcome.internal
            run = runs.get(suite)
            if run is None:
                continue
            hidden = self._hidden(suite)
            self._provenance_from(run, hidden)
            if hidden:  # its duration and phases are the submission's to shape: log only
                log_hidden_timings(self.problem.name, suite, run)
            else:
                self.timings[f"{suite}_s"] = round(run.wall_s, 4)
                self.timings.setdefault("phases", {})[suite] = suite_timings(run)
            if suite == "public" and (run.stdout or run.stderr):
                self.output = self.redact(run.output_tail())
        if internal is not None:
            return self.internal_error(internal)
        order = tests
        if self.fail_fast:  # the test that failed, not one it kept from running, names it
            order = sorted(tests, key=lambda t: t.verdict is Verdict.NR)
        verdict = overall([t.verdict for t in order], compile_error=ce is not None)
        first = next((t for t in order if t.verdict.counts and not t.verdict.passed), None)
        if ce is None and first is not None and first.hidden:
            verdict = hidden_overall(runs.get(first.suite))
            log.info("%s: first failure hidden (%s): overall %s", self.problem.name,
                     first.name, verdict)
        return self._report(verdict, tests, compile_error=ce, output=self.output,
                            experiment=report_experiment(self.problem, ref_tests, tests, runs))

    def _provenance_from(self, run, hidden: bool) -> None:
        if run.layers and not self.provenance["sandbox_layers"]:
            self.provenance["sandbox_layers"] = run.layers
            self.provenance["missing_layers"] = run.missing_layers or sorted(
                k for k, v in run.layers.items() if not v)
        gpu = (run.log.finished or {}).get("gpu_name")  # a hidden run could write any name
        if gpu and self.device == "cuda" and not hidden:
            self.provenance["gpu_name"] = gpu


def _ended_badly(run) -> bool:
    """A failure the live verdicts cannot see: the child died, or did not import."""
    log = run.log
    return bool(run.died or run.sandbox_error or log.runner_error or log.compile_error
                or log.collect_errors)


def _cheapest_first(ref_tests: dict) -> list[str]:
    """Node ids (parameters folded into their function) by the reference's CPU time, cheapest
    first, file order among equals: a failing submission is caught sooner."""
    cost: dict[str, float] = {}
    for name, e in ref_tests.items():
        node = TestId.parse(name).base
        cost[node] = cost.get(node, 0.0) + float(e.get("time_s") or 0.0)
    return sorted(cost, key=cost.__getitem__)


def _files(folder) -> list:
    return sorted(p for p in folder.rglob("*.py")) if folder.is_dir() else []


def _safe_hints(problem: Problem) -> list:
    """The problem's hints; none where hints.toml is invalid (`judge check` says why), since a
    hint must never cost a student their verdict."""
    try:
        return problem.hints
    except (ProblemError, OSError):
        return []


def _safe_version(problem: Problem) -> str | None:
    try:
        return problem.version
    except Exception:
        return None
