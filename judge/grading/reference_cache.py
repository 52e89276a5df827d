"""The reference's observations per problem version and device: computed once by running the
same tests over the reference solution (sandboxed), then kept on disk and reused.

    <cache>/judge/reference/<problem version>-<device>-<python>-<torch>-<mode>.json
    <cache> = $KVPRACTICE_CACHE or <repo>/.cache

<mode> is "warm" where this process's runs fork from zygotes (warm_pool.intended), else
"cold": a zygote has torch and pytest imported, so a test whose first line imports torch took
the reference nothing warm and seconds cold. A limit from the warm figure gave a cold run of
an accepted file TLE (the parity check on a busy CI machine); each mode is measured as it runs.

The files are private to the judge's user (mode 0600 in a 0700 folder), so a sandboxed child
running as another user cannot read the expected values even without a private filesystem.

A public test's entry also holds the reference's pool timeline (`trace`, runner/trace.py), the
`expected` side of a failing test's timelines; hidden tests have none. Besides the observations,
a suite's entry holds the reference's CPU times, from which the
submission's limits are derived (clock.py): each test's `time_s`, `import_s` (the module's
import) and `gap_s` (the costliest stretch outside the tests, e.g. collecting test files).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import threading
import time
from pathlib import Path

from judge.config import settings
from judge.grading.environment import cache_tag
from judge.grading.workdir import RUNNER_SRC
from judge.judging.clock import TimeLimits, shown_cpu_s
from judge.judging.test_id import TestId
from judge.problem import Problem

SCHEMA = 3  # 2: times are CPU seconds of the sandboxed tree (were wall clock), gap_s added
#            3: public tests' entries have `trace` (the reference's pool timeline)


def _mode(device: str) -> str:
    from judge.grading import warm_pool  # the pool imports the sandbox: only when asked

    return "warm" if warm_pool.intended(device) else "cold"


def cache_root() -> Path:
    return settings().cache_dir


def runner_fingerprint() -> str:
    """sha256 of the runner's sources: a new runner invalidates cached references."""
    h = hashlib.sha256()
    for p in sorted(RUNNER_SRC.glob("*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


class ReferenceCache:
    """The files of one cache folder. With `in_memory` (a long-lived worker) what was read is
    kept, and read again only when its file changes."""

    def __init__(self, root: str | os.PathLike | None = None, *, in_memory: bool = False):
        self.dir = Path(root) if root is not None else cache_root() / "judge" / "reference"
        self._memo: dict | None = {} if in_memory else None

    def path(self, problem: Problem, device: str) -> Path:
        return self.dir / f"{problem.version}-{cache_tag(device)}-{_mode(device)}.json"

    def load(self, problem: Problem, device: str) -> dict:
        """The cached suites ({suite: data}) for this problem version and device, or {}."""
        path = self.path(problem, device)
        if self._memo is None:
            return self._read(path)
        try:
            key = (str(path), path.stat().st_mtime_ns)
        except OSError:
            return {}
        if key not in self._memo:
            self._memo[key] = self._read(path)
        return self._memo[key]

    @staticmethod
    def _read(path: Path) -> dict:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("schema") != SCHEMA or \
                data.get("runner") != runner_fingerprint():
            return {}
        suites = data.get("suites")
        return suites if isinstance(suites, dict) else {}

    def store(self, problem: Problem, device: str, suites: dict) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        data = {"schema": SCHEMA, "runner": runner_fingerprint(), "problem": problem.name,
                "version": problem.version, "device": device, "suites": suites}
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, separators=(",", ":"))
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path(problem, device))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def lock(self, problem: Problem, device: str):
        """Held while the reference is computed, so two workers do not both compute it."""
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o700)
        path = self.dir / f".{problem.version[:16]}-{cache_tag(device)}-{_mode(device)}.lock"
        with open(path, "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


# ---- computing the reference ----------------------------------------------------------------

class ReferenceFailure(RuntimeError):
    """The reference run did not pass cleanly: the problem's (or the judge's) fault."""


def _check_reference(problem: Problem, suite: str, run) -> dict:
    log = run.log
    tail = run.output_tail(1500)
    where = f"reference run of the {suite} suite of {problem.name}"
    if run.sandbox_error:
        raise ReferenceFailure(f"{where}: the sandbox failed: {run.sandbox_error}")
    if log.runner_error:
        raise ReferenceFailure(f"{where}: runner error: {log.runner_error}\n{tail}")
    if log.compile_error:
        ce = log.compile_error
        raise ReferenceFailure(f"{where}: the reference does not import: {ce['exc_type']}: "
                               f"{ce['message']}\n{ce.get('traceback') or ''}")
    if log.import_timeout:
        raise ReferenceFailure(f"{where}: importing the reference timed out")
    for err in log.collect_errors:
        raise ReferenceFailure(f"{where}: {err.get('file')} failed to import: "
                               f"{err['exc_type']}: {err['message']}\n{err.get('traceback')}")
    collected = log.collected or []
    expected = {t.node for t in problem.tests(suite)}
    found = {TestId(suite, n).base for n in collected}
    if expected - found:
        raise ReferenceFailure(f"{where}: tests not collected: {sorted(expected - found)}")
    clock = run.clock
    tests = []
    for name in collected:
        rec = log.tests.get(name)
        if rec is None or rec.finished is None:
            state = "did not finish" if rec else "did not run"
            why = ("timed out" if run.timed_out else "ran out of memory" if run.memory_exceeded
                   else "printed too much" if run.output_exceeded else
                   f"exit status {run.returncode}, signal {run.signal}")
            raise ReferenceFailure(f"{where}: {name} {state} ({why})\n{tail}")
        fin = rec.finished
        if fin["outcome"] not in ("passed", "skipped"):
            raise ReferenceFailure(f"{where}: {name} {fin['outcome']}: {fin['exc_type']}: "
                                   f"{fin['message']} at {fin.get('where')}\n"
                                   f"{fin.get('traceback') or ''}")
        entry = {"name": f"{suite}/{name}", "outcome": fin["outcome"],
                 "observations": rec.observations,
                 "time_s": _cpu(fin.get("cpu_s"), clock.tests.get(name))}
        if suite == "public":  # a hidden test's timeline would show what it does
            entry["trace"] = rec.trace
        tests.append(entry)
    gap = clock.gap_max
    return {"tests": tests, "import_s": _cpu(log.import_cpu_s, clock.import_use),
            "gap_s": _cpu(None, gap) if gap is None or gap.cpu_s is not None else gap.wall_s,
            "start_s": run.start_s or 0.0, "wall_s": run.wall_s}


def _cpu(child_s, measured) -> float:
    """The parent's measurement, refined by the runner's own figure within its bounds. Where
    the host cannot measure CPU time (no /proc), the reference's runner is believed: it is
    our own code running our own solution."""
    value = shown_cpu_s(child_s, measured)
    if value is None:
        value = child_s if isinstance(child_s, (int, float)) else 0.0
    return round(float(value), 6)


def compute_reference(problem: Problem, suite: str, device: str) -> dict:
    from judge.grading.suite_run import run_suite
    from judge.grading.workdir import View

    source = problem.reference_path.read_text(encoding="utf-8")
    with View(problem) as view:
        if suite not in view.tests:
            return {"tests": [], "import_s": 0.0, "start_s": 0.0, "wall_s": 0.0}
        sub = view.submission("reference", source)
        run = run_suite(problem, view, run=f"ref-{suite}", suite=suite, submission=sub,
                        targets=[f.name for f in problem.test_files(suite)],
                        limits=TimeLimits.unlimited(problem.limits), device=device)
        return _check_reference(problem, suite, run)


def get_reference(problem: Problem, suites: list[str], device: str, *,
                  cache: ReferenceCache | None = None, parallel: bool = True
                  ) -> tuple[dict, bool]:
    """({suite: reference data}, whether every suite came from the cache).
    Raises ReferenceFailure when the reference run fails."""
    if problem.language != "python":  # a C++ test's cases, from its own cache (grading/cpp/)
        from judge.grading.cpp.reference import reference_entries
        return reference_entries(problem, suites)
    cache = cache or ReferenceCache()
    have = cache.load(problem, device)
    if all(s in have for s in suites):
        return {s: have[s] for s in suites}, True
    with cache.lock(problem, device):
        have = cache.load(problem, device)  # another worker may have finished meanwhile
        missing = [s for s in suites if s not in have]
        if missing:
            if parallel and len(missing) > 1:
                from concurrent.futures import ThreadPoolExecutor
                with ThreadPoolExecutor(len(missing)) as pool:
                    done = dict(zip(missing, pool.map(
                        lambda s: compute_reference(problem, s, device), missing)))
            else:
                done = {s: compute_reference(problem, s, device) for s in missing}
            have = {**have, **done}
            cache.store(problem, device, have)
    return {s: have[s] for s in suites}, not missing


_MEMO: dict[tuple[str, str], tuple[float, dict | None, str | None]] = {}
_MEMO_LOCK = threading.Lock()
RETRY_S = 60.0  # a reference that failed is not run again for every page view before this


def public_expectations(problem: Problem | str, device: str = "cpu") -> dict[str, dict]:
    """The reference's entry for each public test ({test name: {outcome, observations: [{label,
    value}, ...], time_s, ...}}), from the same cache grading uses, kept in this process's
    memory per problem version: what the page's Run (judge/browser/page_run.py) judges against, each
    entry exactly as `test_verdict.judge_test` takes it. Raises ReferenceFailure (again for
    RETRY_S seconds after a failure, without running the reference)."""
    from judge.problem import load_problem

    problem = load_problem(problem)
    key = (problem.version, device)
    with _MEMO_LOCK:
        at, value, error = _MEMO.get(key, (0.0, None, None))
        if value is not None:
            return value
        if error is not None and time.monotonic() - at < RETRY_S:
            raise ReferenceFailure(error)
        try:
            ref, _ = get_reference(problem, ["public"], device)
        except Exception as exc:
            _MEMO[key] = (time.monotonic(), None, str(exc)[-2000:] or type(exc).__name__)
            raise
        value = {t["name"]: t for t in ref["public"]["tests"]}
        _MEMO[key] = (time.monotonic(), value, None)
        return value


def public_expectations_or_error(problem: Problem | str, device: str = "cpu"
                                 ) -> tuple[dict[str, dict] | None, str | None]:
    """(public_expectations(problem), None), or (None, why) when the reference cannot give
    them: for a front end that shows the problem either way."""
    try:
        return public_expectations(problem, device), None
    except Exception as exc:  # the reference's or the judge's fault: the page says why
        return None, str(exc)[-2000:] or type(exc).__name__
