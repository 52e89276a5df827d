"""`judge check --mutate`: how much of the reference solution the problem's tests pin down.

Every mutant of the reference (mutants.py) is graded as a submission with the full suite
against the unmutated reference's cached observations, stopping at its first failing test:
any verdict but AC kills it. A mutant on a line the suites never execute on this device
(lines.py) is not graded: it is "not run on <device>", and "CUDA-only" when the device is a CPU
and the line only runs on CUDA (a branch on `is_cuda` or pinned memory, a `torch.cuda` call).

    N = killed + survived + not run (+ errors: gradings that ended in IE)
    killed share = killed / (N - CUDA-only)

CUDA-only mutants leave the share because no test can reach them here; every other mutant
not run stays in it, as the gap in the tests it is. The gate fails when the share is below
the problem's `[check] mutation_min` (default 0: report only), on any IE, or when the
reference itself does not pass when graded the same way.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Callable

from judge.authoring.mutation.lines import CoverageError, cuda_lines, executed_lines
from judge.authoring.mutation.mutants import Mutant, generate
from judge.grading.environment import resolve_device
from judge.grading.reference_cache import ReferenceCache, ReferenceFailure, get_reference
from judge.judging.verdict import Verdict
from judge.problem import REPO_ROOT, Problem, load_problem

KILLED, SURVIVED, NOT_RUN, CUDA_ONLY, ERROR = "killed", "survived", "not run", "CUDA-only", "error"


@dataclass
class MutantResult:
    mutant: Mutant
    status: str                    # one of the five above
    verdict: str | None = None     # of its grading
    killed_by: str | None = None   # the test that failed first
    time_s: float | None = None    # wall clock of its grading

    def to_dict(self, path: str) -> dict:
        m = self.mutant
        return {"index": m.index, "line": m.line, "operator": m.operator,
                "diff": m.diff(path), "status": self.status, "verdict": self.verdict,
                "killed_by": self.killed_by, "time_s": self.time_s}


@dataclass
class MutationResult:
    problem: str
    device: str = "cpu"
    path: str = ""                 # the reference, as diffs name it
    minimum: float = 0.0
    results: list[MutantResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    def count(self, status: str) -> int:
        return sum(r.status == status for r in self.results)

    @property
    def share(self) -> float | None:
        scored = len(self.results) - self.count(CUDA_ONLY)
        return self.count(KILLED) / scored if scored else None

    @property
    def ok(self) -> bool:
        share = self.share
        return not self.errors and not self.count(ERROR) and \
            (share is None or share >= self.minimum)

    @property
    def survivors(self) -> list[MutantResult]:
        """Everything not killed, by line."""
        return sorted((r for r in self.results if r.status != KILLED),
                      key=lambda r: (r.mutant.line, r.mutant.index))

    def summary(self) -> str:
        share = "n/a" if self.share is None else f"{self.share:.0%}"
        errors = f" errors {self.count(ERROR)}" if self.count(ERROR) else ""
        return (f"mutants {len(self.results)} killed {self.count(KILLED)} survived "
                f"{self.count(SURVIVED)}{errors} (not run on {self.device}: "
                f"{self.count(NOT_RUN) + self.count(CUDA_ONLY)}, CUDA-only: "
                f"{self.count(CUDA_ONLY)}) killed share {share} (min {self.minimum:.0%})")

    def to_dict(self) -> dict:
        return {"problem": self.problem, "device": self.device, "reference": self.path,
                "ok": self.ok, "summary": {
                    "line": self.summary(), "mutants": len(self.results),
                    "killed": self.count(KILLED), "survived": self.count(SURVIVED),
                    "not_run": self.count(NOT_RUN) + self.count(CUDA_ONLY),
                    "cuda_only": self.count(CUDA_ONLY), "errors": self.count(ERROR),
                    "killed_share": self.share, "mutation_min": self.minimum},
                "wall_s": round(self.wall_s, 1), "errors": self.errors,
                "warnings": self.warnings,
                "mutants": [r.to_dict(self.path) for r in self.results]}


def mutate_problem(problem: Problem | str, *, device: str = "auto", jobs: int | None = None,
                   on_progress: Callable[[int, int, MutantResult], None] | None = None,
                   cache: ReferenceCache | None = None) -> MutationResult:
    """Grades every mutant of the problem's reference; see the module doc."""
    from judge.grading.grader import grade

    t0 = time.perf_counter()
    p = load_problem(problem)
    device = resolve_device(device)
    res = MutationResult(p.name, device, _shown_path(p), p.config.check.mutation_min)
    jobs = max(1, jobs or os.cpu_count() or 1)
    source = p.reference_path.read_text(encoding="utf-8")
    mutants = generate(source)
    suites = [s for s in ("public", "hidden") if p.tests(s)]
    cache = cache or ReferenceCache()
    try:
        get_reference(p, suites, device, cache=cache)
    except ReferenceFailure as e:
        res.errors.append(str(e))
        return res

    def run(src: str):
        return grade(p, src, device=device, reveal_hidden=True, parallel=False, cache=cache,
                     stop_at_first_failure=True)

    with ThreadPoolExecutor(jobs) as pool:
        lines_job = pool.submit(executed_lines, p, device)
        baseline = run(source)
        try:
            executed: set[int] | None = lines_job.result()
        except CoverageError as e:
            executed = None
            res.warnings.append(f"every line counted as executed: {e}")
        if baseline.verdict is not Verdict.AC:
            res.errors.append(f"the reference gets {baseline.verdict} when its tests run "
                              f"cheapest first and stop at the first failure "
                              f"({_first_failure(baseline) or baseline.ie_cause}): the suite "
                              "depends on the order of its tests")
            res.wall_s = time.perf_counter() - t0
            return res
        cuda = cuda_lines(source) if device == "cpu" else set()
        todo: list[Mutant] = []
        for m in mutants:
            if executed is None or any(n in executed for n in m.lines):
                todo.append(m)
            else:
                status = CUDA_ONLY if any(n in cuda for n in m.lines) else NOT_RUN
                res.results.append(MutantResult(m, status))
        done = len(res.results)
        futures = {pool.submit(_timed, run, m.source): m for m in todo}
        for fut in as_completed(futures):
            report, wall = fut.result()
            r = _judged(futures[fut], report, wall)
            res.results.append(r)
            done += 1
            if on_progress:
                on_progress(done, len(mutants), r)
    res.results.sort(key=lambda r: r.mutant.index)
    res.wall_s = time.perf_counter() - t0
    return res


def _timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, round(time.perf_counter() - t, 2)


def _judged(m: Mutant, report, wall: float) -> MutantResult:
    v = report.verdict
    if v is Verdict.IE:
        return MutantResult(m, ERROR, str(v), report.ie_cause, wall)
    if v is Verdict.AC:
        return MutantResult(m, SURVIVED, str(v), None, wall)
    return MutantResult(m, KILLED, str(v), _first_failure(report) or str(v), wall)


def _first_failure(report) -> str | None:
    for t in report.tests:
        if t.verdict.counts and t.verdict not in (Verdict.AC, Verdict.NR):
            return f"{t.name} ({t.verdict})"
    return None


def _shown_path(p: Problem) -> str:
    path = p.reference_path
    for base in (REPO_ROOT, p.base):
        try:
            return str(path.relative_to(base))
        except ValueError:
            continue
    return str(path)
