"""The page's Run: a problem's public tests against the student's file in the browser's Python
(Pyodide, in a Web Worker), judged by the same modules that judge Submit on the server.

The sandbox runner's pytest plugin (judge/runner/) writes its events to a file in the page's
in-memory filesystem, `child_log.ChildLog` reads them back, `test_verdict.judge_test` gives each test
its verdict against the reference's entry for it (the server's `public_expectations`, passed
through unchanged), and `report.Report` with `verdict.overall` makes the result. So the page and
the server give the same per-test verdicts and the same first divergence for the same code
(tests/browser/test_page_parity.py). What surrounds the run differs: no sandbox, no CPU timers (the
page stops a run that takes too long from JavaScript), no hidden tests, and a module the
browser cannot load (BROWSER_MISSING) makes a test SKIP, or the whole file "unsupported",
instead of RE or CE. Like the sandbox (PYTHONHASHSEED=0), the page starts its Python without
hash randomisation (web/frontend/src/worker.js), so sets of str iterate in the same order.

Needs only the standard library and pytest; `page_files()` lists the judge's files the page
loads (the rooms in PAGE_ROOMS, whole), which is what the front-end build bundles.

Entry points: `run(spec) -> dict` (a Report's JSON, plus `unsupported` and the recorded
`observations`) and `main()` for a child process (a JSON spec on stdin, the result on stdout).
"""

from __future__ import annotations

import importlib
import io
import json
import os
import platform
import shutil
import sys
import time
import types

from judge import runner as runner_package
from judge.judging.bounded import strict_dumps
from judge.judging.child_log import ChildLog
from judge.judging.report import Failure, Report, TestResult
from judge.judging.run_record import RunRecord
from judge.judging.scoring import score_of
from judge.judging.suite_judge import SuiteJudge
from judge.judging.syntax import check as syntax_check
from judge.judging.test_id import TestId
from judge.judging.test_verdict import Redactor
from judge.judging.verdict import Verdict, overall
from judge.judging.vocabulary import FailureKind
from judge.runner import install_step, plugin
from judge.runner.__main__ import pytest_args
from judge.runner.errors import describe_import_error
from judge.runner.events import EventWriter, now

# Modules the browser cannot import; code that needs them is graded by Submit only.
BROWSER_MISSING = frozenset({"torch", "numpy", "safetensors", "transformers", "tokenizers",
                             "triton"})
SUITE = "public"
# The browser-safe rooms of the judge: everything in them imports only the standard library,
# pytest and each other, so the page bundles them whole (tests/browser/test_page_runner.py proves it).
PAGE_ROOMS = ("judging", "browser", "runner")
_JUDGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_runs = [0]
_added_paths: list[str] = []


def page_files() -> list[str]:
    """The judge's files the page runner imports, relative to the repository root."""
    repo = os.path.dirname(_JUDGE_DIR)
    files = [os.path.join(_JUDGE_DIR, "__init__.py")]
    for room in PAGE_ROOMS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(_JUDGE_DIR, room)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            files += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py")]
    return [os.path.relpath(f, repo).replace(os.sep, "/") for f in files]


def run(spec: dict) -> dict:
    """Runs `spec["tests"]` against `spec["source"]` imported as `spec["module"]`.

    spec keys: module, source, tests ({"public/test_x.py": text, helpers...}), handbook
    ({module name: source}), install (the names of `[handbook] install`, optional), expected
    ({test name: the reference's entry, as `judge.public_expectations` gives it} or None to
    check the tests' own assertions only),
    weights ({test name: weight}, optional), hints (the problem's hints.toml hints, optional:
    the report shows those its first failure meets), python (the grading Python, "3.11": its grammar
    decides CE too, optional), workdir (where to write the files, optional).
    """
    started = time.perf_counter()
    module, source = spec["module"], spec["source"]
    expected = spec.get("expected")
    weights = spec.get("weights") or {}
    planned = list(expected or {})
    filename = f"{module}.py"
    ce = syntax_check(source, filename, spec.get("python"))
    if ce is not None:
        return _result(Verdict.CE, _not_run(planned, weights, FailureKind.COMPILE), started,
                       compile_error=ce)

    root, suite_dir, submission = _write_files(spec)
    S = plugin.S
    S.writer = writer = EventWriter(os.path.join(root, "results.jsonl"))
    S.submission, S.suite_dir = submission, suite_dir
    S.limits, S.current, S.observer = {}, None, None
    writer.emit("start", t=now(), python=platform.python_version(), pid=os.getpid())
    out = io.StringIO()
    saved = sys.stdout, sys.stderr, os.getcwd()
    spawn_t, t0 = now(), time.perf_counter()
    os.makedirs(os.path.join(root, "scratch"), exist_ok=True)
    try:
        sys.stdout = sys.stderr = out
        os.chdir(os.path.join(root, "scratch"))
        _install(list(spec.get("install") or []))
        imported, missing = _import_submission(module, writer)
        skips = _run_pytest(suite_dir, writer) if imported else {}
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        os.chdir(saved[2])
    wall_s = time.perf_counter() - t0
    if missing is not None:
        res = _result(Verdict.CE, _not_run(planned, weights, FailureKind.NOT_RUN), started)
        res["verdict"] = "unsupported"
        res["unsupported"] = (f"Your code imports {missing}, which the browser cannot run. "
                              "Press Submit: the server grades it with the full test suite.")
        return res
    log = _log(root)
    # in the page nothing is timed out, killed or limited by the judge (the page ends a run
    # that takes too long itself, from JavaScript): the record has no flags and no clock
    page_run = RunRecord(SUITE, log, spawn_t, wall_s, ended=True)
    tests, ce, internal = _judge(page_run, source, expected, weights, skips)
    res = _result(overall([t.verdict for t in tests], compile_error=ce is not None,
                          internal_error=internal is not None),
                  tests, started, compile_error=ce, output=out.getvalue()[-20000:] or None,
                  public_s=wall_s, hints=spec.get("hints"))
    res["observations"] = {f"{SUITE}/{n}": r.observations for n, r in log.tests.items()}
    return res


def _judge(page_run: RunRecord, source: str, expected, weights, skips: dict):
    """(tests, compile_error, internal error) as the server's grading makes them from a run:
    the same per-suite loop (suite_judge.py), with the page's one difference: a test that
    needs a module the browser lacks is SKIP, a test file that does (at import) no CE."""
    log = page_run.log
    skipped_files = {e.get("file"): _missing_in(e.get("message")) for e in log.collect_errors}
    skipped_files = {f: m for f, m in skipped_files.items() if m}
    if expected is None:  # no reference: each test is held against what it observed itself
        expected = {f"{SUITE}/{n}": {"outcome": "skipped" if log.tests[n].outcome == "skipped"
                                     else "passed", "observations": log.tests[n].observations}
                    for n in (log.collected or []) if n in log.tests}

    def browser_lacks(r: TestResult, rec) -> TestResult:
        fin = (rec.finished or {}) if rec is not None else {}
        node = TestId.parse(r.name)
        missing = skipped_files.get(node.file) or _missing_in(
            skips.get(node.node) if fin.get("outcome") == "skipped" else fin.get("message"))
        if not (missing and r.verdict.counts and not r.verdict.passed):
            return r
        return TestResult(r.name, SUITE, Verdict.SKIP, weight=r.weight, failure=Failure(
            FailureKind.SKIPPED, message=f"needs {missing}, which the browser cannot run: "
            "Submit grades it on the server"))

    judge = SuiteJudge(SUITE, expected, weight=lambda n: float(weights.get(n, 1.0)),
                       hidden=False, source=source, redact=Redactor([], []))
    out = judge.finish(page_run, ignore_files=frozenset(skipped_files), adjust=browser_lacks)
    return out.tests, out.compile_error, out.internal


def _result(verdict: Verdict, tests: list, started: float, *, compile_error=None, output=None,
            public_s=None, hints=None) -> dict:
    report = Report(verdict=verdict, score=0.0, problem={}, submission={}, tests=tests,
                    hint_source=list(hints or []),
                    compile_error=compile_error, output=output, scored_suites=[SUITE],
                    provenance={"device": "browser", "python": platform.python_version()})
    if verdict not in (Verdict.CE, Verdict.IE):
        report.score = score_of(tests, (SUITE,))
    report.timings["total_s"] = round(time.perf_counter() - started, 4)
    if public_s is not None:
        report.timings["public_s"] = round(public_s, 4)
    res = report.to_dict()
    res.update(unsupported=None, observations={})
    return res


def _not_run(names, weights, kind: FailureKind) -> list[TestResult]:
    return [TestResult(n, SUITE, Verdict.NR, weight=float(weights.get(n, 1.0)),
                       failure=Failure(kind)) for n in names]


# ---- the run -----------------------------------------------------------------------------

def _write_files(spec: dict) -> tuple[str, str, str]:
    """Writes the solution, the handbook modules and the tests into a fresh folder, forgets the
    modules of earlier runs and puts this run's folders on sys.path; (root, suite dir, file)."""
    _runs[0] += 1
    base = os.path.abspath(spec.get("workdir") or "page-run")
    shutil.rmtree(base, ignore_errors=True)
    root = os.path.join(base, f"run{_runs[0]}")
    sol, hb, tests = (os.path.join(root, d) for d in ("solution", "handbook", "tests"))
    module, handbook = spec["module"], spec.get("handbook") or {}
    _write(sol, {f"{module}.py": spec["source"]})
    _write(hb, {f"{name}.py": text for name, text in handbook.items()})
    _write(tests, spec["tests"])
    test_modules = {os.path.splitext(os.path.basename(p))[0] for p in spec["tests"]}
    _forget({module, *handbook, *test_modules, "conftest"}, base)
    for p in _added_paths:
        while p in sys.path:
            sys.path.remove(p)
    _added_paths[:] = [sol, hb]
    sys.path[:0] = _added_paths
    _alias_runner()
    return root, os.path.join(tests, SUITE), os.path.join(sol, f"{module}.py")


def _install(names: list[str]) -> None:
    """`[handbook] install` (tritonkit), as the handbook's browser runner calls it: the simulator
    only. What an earlier run's install put in sys.modules (its `triton`) is forgotten first,
    or a later problem's `import triton` would find an old run's stand-in."""
    for name in _installed:
        sys.modules.pop(name, None)
    before = set(sys.modules)
    try:
        install_step.run(names, prefer_real=False)
    finally:
        _installed[:] = [n for n in sys.modules if n not in before]


_installed: list[str] = []


def _write(folder: str, files: dict) -> None:
    for rel, text in files.items():
        rel = rel.replace("\\", "/").lstrip("/")
        if ".." in rel.split("/"):
            raise ValueError(f"bad file name {rel!r}")
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


def _forget(names: set, folder: str) -> None:
    """Forgets earlier runs' modules, or the next run would test the old code."""
    for name, mod in list(sys.modules.items()):
        file = getattr(mod, "__file__", None) or ""
        if name.split(".")[0] in names or file.startswith(folder + os.sep):
            del sys.modules[name]
    importlib.invalidate_caches()


def _alias_runner() -> None:
    """The runner is `judge_runner` in the sandbox, and tests and the handbook's checker import
    it by that name (`judge_runner.plugin.record`): the same modules, so one Session."""
    sys.modules["judge_runner"] = runner_package
    for file in sorted(os.listdir(os.path.dirname(runner_package.__file__))):
        name, ext = os.path.splitext(file)
        if ext == ".py" and not name.startswith("__"):
            try:
                sys.modules[f"judge_runner.{name}"] = importlib.import_module(
                    f"{runner_package.__name__}.{name}")
            except (OSError, ImportError):
                # a server-only part of the runner (the warm zygote loads libc): no test or
                # checker in the page imports it, and Pyodide cannot load it
                continue


def _import_submission(module: str, writer: EventWriter) -> tuple[bool, str | None]:
    """Imports the student's module as the sandbox runner does: (imported, the browser-missing
    module it needs when that is why it failed; then no event is written)."""
    t0, cpu0 = time.perf_counter(), plugin.cpu_now()
    try:
        importlib.import_module(module)
    except BaseException as exc:  # noqa: BLE001 - the student's code may raise anything
        missing = _missing_module(exc)
        if missing is None:
            writer.emit("compile_error", t=now(),
                        **describe_import_error(exc, exc.__traceback__, plugin.S.submission))
        return False, missing
    writer.emit("imported", t=now(), import_s=round(time.perf_counter() - t0, 6),
                cpu_s=round(plugin.cpu_now() - cpu0, 6))
    return True, None


class _SkipReasons:
    """Why each test was skipped ({node: reason}): `pytest.importorskip("torch")` skips a test
    in the page that the reference ran, which is the browser's lack, not a wrong answer."""

    def __init__(self):
        self.reasons: dict[str, str] = {}

    def pytest_runtest_logreport(self, report):
        if report.skipped and isinstance(report.longrepr, tuple):
            node = plugin.S.current
            if node is not None:
                self.reasons[node] = str(report.longrepr[2])


def _run_pytest(suite_dir: str, writer: EventWriter) -> dict[str, str]:
    """Runs the suite with the runner's plugin; why each skipped test was skipped."""
    import pytest

    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    targets = sorted(f for f in os.listdir(suite_dir)
                     if f.startswith("test_") and f.endswith(".py"))
    args = types.SimpleNamespace(suite_dir=suite_dir, targets=targets)
    t0 = time.perf_counter()
    skips = _SkipReasons()
    code = int(pytest.main(pytest_args(args), plugins=[plugin, skips]))
    writer.emit("finished", t=now(), tests_s=round(time.perf_counter() - t0, 6),
                exit_code=code, torch=None, gpu_name=None)
    if code in (3, 4):  # pytest: internal error / usage error
        writer.emit("runner_error", message=f"pytest exited with status {code}")
    return skips.reasons


def _log(root: str) -> ChildLog:
    log = ChildLog()
    with open(os.path.join(root, "results.jsonl"), "rb") as f:
        log.feed(f.read())
    return log


def _missing_module(exc: BaseException | None) -> str | None:
    """The browser-missing top-level module an ImportError (or its cause) is about."""
    while exc is not None:
        if isinstance(exc, ImportError):
            name = (getattr(exc, "name", None) or "").split(".")[0]
            if name in BROWSER_MISSING:
                return name
        exc = exc.__cause__ or exc.__context__
    return None


def _missing_in(message) -> str | None:
    """The browser-missing module a recorded "No module named ..." message names."""
    if not isinstance(message, str):
        return None
    return next((m for m in sorted(BROWSER_MISSING)
                 if f"No module named '{m}" in message or f'No module named "{m}' in message),
                None)


def main() -> None:
    spec = json.loads(sys.stdin.read())
    sys.stdout.write(strict_dumps(run(spec)))


if __name__ == "__main__":
    main()
