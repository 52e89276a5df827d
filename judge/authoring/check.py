"""`check_problem(problem) -> CheckResult`: a problem proves itself before it goes live.

- problem.toml is valid, the statements (en, zh) exist and render, the files it names exist,
  every weight names a test;
- the reference passes every test (AC) and every test records at least one observation; an
  imported problem's reference is also run `reference_runs` times (3 by default) and each test's
  outcome must be the same in every run: one that differs is reported "flaky", not proved (a
  test drawing unseeded random data, depending on timing or on `id()` order passes by chance,
  and a single grading would call the reference right, or plainly wrong);
- the starter imports and fails (anything but AC);
- every submissions/accepted/*.py gets AC;
- every submissions/wrong_answer/*.py gets the verdict its header names (`# expect: WA`) and
  fails every test it names (`# caught-by: hidden/test_x.py::test_y`);
- hints.toml (if any): each hint names real tests and a heading of both statements, and every
  known-wrong file's first failure meets at least one hint (the hint a student would be shown).
- labels.<lang>.json (if any): every label the reference records has its text there (a warning).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from judge.judging.report import Report
from judge.judging.verdict import Verdict
from judge.problem import LANGS, Problem, ProblemError, load_problem

# a header's comments: `# expect: WA` in Python, `// expect: WA` in C++
_EXPECT = re.compile(r"^(?:#|//)\s*expect:\s*([A-Za-z]+)\s*$", re.MULTILINE)
_CAUGHT = re.compile(r"^(?:#|//)\s*caught-by:\s*(.+?)\s*$", re.MULTILINE)
REFERENCE_RUNS = 3      # runs of an imported problem's reference (`--reference-runs`)
FLAKY = "flaky: "       # how the problem line of a flaky reference starts (console.py shows
#                         it in the reader's language instead)


@dataclass
class SubmissionCheck:
    label: str                   # "reference", "starter", "accepted/x.py", "wrong_answer/y.py"
    path: Path
    expect: str                  # a verdict, or "not AC" for the starter
    caught_by: list[str] = field(default_factory=list)
    report: Report | None = None
    problems: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)   # ids of the hints its first failure meets
    # an imported problem's reference: each of its runs, {test: the test's own outcome}
    runs: list[dict[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def verdict(self) -> str | None:
        return str(self.report.verdict) if self.report else None

    def verdicts(self) -> dict[str, str]:
        return {t.name: str(t.verdict) for t in self.report.tests} if self.report else {}

    @property
    def flaky(self) -> dict[str, list[str]]:
        """{test: its outcome in each of the reference's runs} for the tests whose outcome was
        not the same in every run ("not run": missing from that run)."""
        if len(self.runs) < 2:
            return {}
        names = list(dict.fromkeys(n for run in self.runs for n in run))
        each = {n: [run.get(n, "not run") for run in self.runs] for n in names}
        return {n: outcomes for n, outcomes in each.items() if len(set(outcomes)) > 1}


@dataclass
class CheckResult:
    name: str
    problem: Problem | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    submissions: list[SubmissionCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors and all(s.ok for s in self.submissions)

    @property
    def tests(self) -> list[str]:
        return [t.name for t in self.problem.tests()] if self.problem else []

    @property
    def flaky(self) -> dict[str, list[str]]:
        """The reference's tests whose outcome differed across its runs (SubmissionCheck.flaky)."""
        return next((s.flaky for s in self.submissions if s.label == "reference"), {})

    def table(self) -> list[dict]:
        """One row per submission: label, expect, verdict, ok, {test: verdict}, each of the
        reference's runs in a word ("passed", "2 failed") and the tests that differed."""
        return [{"submission": s.label, "expect": s.expect, "verdict": s.verdict, "ok": s.ok,
                 "problems": list(s.problems), "tests": s.verdicts(), "hints": list(s.hints),
                 "runs": [run_summary(r) for r in s.runs], "flaky": s.flaky}
                for s in self.submissions]


def parse_header(source: str) -> tuple[str | None, list[str]]:
    """(expected verdict, tests that must fail) from a wrong submission's header comments."""
    head_lines = []
    for ln in source.splitlines():
        if ln.strip() and not ln.lstrip().startswith(("#", "//")):
            break
        head_lines.append(ln.strip())
    head = "\n".join(head_lines)
    m = _EXPECT.search(head)
    caught = [c.strip() for m2 in _CAUGHT.finditer(head) for c in m2.group(1).split(",")]
    return (m.group(1).upper() if m else None), [c for c in caught if c]


def failed_tests(outcomes: dict[str, str]) -> int:
    """How many tests of one reference run did not pass (skipped counts as passed)."""
    return sum(o not in ("passed", "skipped") for o in outcomes.values())


def run_summary(outcomes: dict[str, str]) -> str:
    """One reference run in a word or two: "passed", or how many tests did not ("2 failed")."""
    bad = failed_tests(outcomes)
    return f"{bad} failed" if bad else "passed"


def reference_run(p: Problem, device: str) -> dict[str, str]:
    """One run of the reference's suites as the reference cache runs them (the same sandboxes,
    the call proxy for an imported problem, no grading limits): {test: its own outcome}
    (passed, failed, skipped, timeout, memory; "did not finish" when it has none). Unlike the
    cache it raises nothing: a failing test is an outcome to compare with the other runs'."""
    from judge.grading.environment import resolve_device
    from judge.grading.suite_run import run_suite
    from judge.grading.workdir import View
    from judge.judging.clock import TimeLimits

    out: dict[str, str] = {}
    with View(p) as view:
        sub = view.submission("reference", p.reference_path.read_text(encoding="utf-8"))
        for suite in (s for s in ("public", "hidden") if s in view.tests):
            run = run_suite(p, view, run=f"check-{suite}", suite=suite, submission=sub,
                            targets=[f.name for f in p.test_files(suite)],
                            limits=TimeLimits.unlimited(p.limits), device=resolve_device(device))
            for name in run.log.collected or []:
                rec = run.log.tests.get(name)
                out[f"{suite}/{name}"] = rec.finished["outcome"] if rec and rec.finished \
                    else "did not finish"
            if not run.log.collected:  # did not import, or no test collected: one outcome
                out[f"{suite}/*"] = "not collected"
    return out


def _static_checks(p: Problem, res: CheckResult) -> None:
    from markdown_it import MarkdownIt

    md = MarkdownIt()
    for lang in LANGS:
        path = p.statement_path(lang)
        if not path.is_file():
            res.errors.append(f"{path}: missing statement ({lang})")
            continue
        text = path.read_text(encoding="utf-8")
        if not text.strip() or not md.render(text).strip():
            res.errors.append(f"{path}: the statement is empty")
        if "TODO" in text:
            res.warnings.append(f"{path}: still contains TODO")
    if not p.starter_path.is_file():
        res.errors.append(f"{p.starter_path}: missing starter")
    if not p.reference_path.is_file():
        res.errors.append(f"{p.path / 'problem.toml'}: field `reference.path`: "
                          f"{p.reference_path} does not exist")
    try:
        p.handbook_paths
        tests = p.tests()
    except ProblemError as e:
        res.errors.append(str(e))
        return
    if not p.tests("public"):
        res.errors.append(f"{p.suite_dir('public')}: no public tests (test_*.py with test_*)")
    if not p.examples():
        res.warnings.append(f"{p.name}: no example tests (test_example*)")
    names = {t.name for t in tests}
    for name in p.config.weights:
        if name not in names:
            res.errors.append(f"{p.path / 'problem.toml'}: field `weights`: {name!r} is not "
                              "a test of this problem")


def _check_reference_observations(p: Problem, device: str, res: CheckResult) -> None:
    from judge.grading.environment import resolve_device
    from judge.grading.reference_cache import ReferenceFailure, get_reference

    suites = [s for s in ("public", "hidden") if p.tests(s)]
    try:
        ref, _ = get_reference(p, suites, resolve_device(device))
    except ReferenceFailure as e:
        res.errors.append(str(e))
        return
    _label_checks(p, [o["label"] for s in suites for t in ref[s]["tests"]
                      for o in t["observations"]], res)
    from judge.grading.proxied import is_proxied

    if is_proxied(p):  # the trusted test process's own outcome is the verdict: plain asserts do
        return
    for s in suites:
        for t in ref[s]["tests"]:
            if t["outcome"] == "passed" and not t["observations"]:
                res.errors.append(f"{t['name']}: records no observation (call observe(...) at "
                                  "least once, so a forged pass cannot match)")


# ---- labels (labels.<lang>.json) ---------------------------------------------------------

def _label_checks(p: Problem, recorded: list, res: CheckResult) -> None:
    """Where a problem has a labels table, each label its reference records has its text there
    (a warning: the page shows the English instead)."""
    from judge.judging.labels import LabelTable

    for lang in LANGS:
        if lang == "en" or not p.labels_path(lang).is_file():
            continue
        try:
            table = LabelTable(p.labels(lang))
        except ProblemError as e:
            res.errors.append(str(e))
            continue
        missing = sorted({str(x) for x in recorded if table.lookup(str(x)) is None})
        for label in missing:
            res.warnings.append(f"{p.labels_path(lang)}: no {lang} text for the label {label!r}")

# ---- end of labels ------------------------------------------------------------------------


# ---- hints (hints.toml) ------------------------------------------------------------------

def _static_hint_checks(p: Problem, res: CheckResult) -> None:
    from judge.judging.hints import statement_anchors

    try:
        hints = p.hints
    except ProblemError as e:
        res.errors.append(str(e))
        return
    names = {t.name for t in p.tests()}
    where = p.path / "hints.toml"
    for h in hints:
        for t in h["tests"]:
            if t not in names:
                res.errors.append(f"{where}: hint {h['id']!r}: {t!r} is not a test of this problem")
        for lang in LANGS:
            path = p.statement_path(lang)
            if path.is_file() and h["rule"][lang] not in statement_anchors(
                    path.read_text(encoding="utf-8")):
                res.errors.append(f"{where}: hint {h['id']!r}: rule.{lang} = "
                                  f"{h['rule'][lang]!r} is no heading of {path.name}")


def _hint_met(p: Problem, check: "SubmissionCheck") -> None:
    """A known-wrong file must meet a hint at its first failure, the one its report shows."""
    from judge.judging.hints import matching_hints

    if not p.hints or check.report is None:
        return
    ff = check.report.first_failure or {}
    suite = next((t.suite for t in check.report.tests if t.name == ff.get("test")), None)
    if suite == "hidden":  # check sees hidden labels; the student's report has the test only
        ff = {"test": ff.get("test"), "label": None, "kind": "failed"}
    check.hints = [h["id"] for h in matching_hints(p.hints, ff)]
    if not check.hints:
        check.problems.append(f"meets no hint: its first failure is {ff.get('test')!r} at "
                              f"observation {ff.get('label')!r} (hints.toml)")

# ---- end of hints -------------------------------------------------------------------------


def _leaves_out_what_tests_call(check: SubmissionCheck, report: Report) -> bool:
    """A C++ starter may leave out what the tests call (the handbook's cpp-shared-ptr starter
    has no reset()): its own file compiles, the tests' calls of it do not (CE with no line of
    the student's file). A compile error in its own lines still says the starter is broken."""
    ce = report.compile_error or {}
    return (report.verdict is Verdict.CE and check.path.suffix in (".cpp", ".cu")
            and ce.get("line") is None)


def _verdict_problems(check: SubmissionCheck, report: Report) -> None:
    """What is wrong with the verdicts `report` (check's) got, against what `check.expect` says."""
    v = report.verdict
    if report.ie_cause and not check.flaky:  # flaky: the cache's run failed by chance too
        check.problems.append(f"internal error: {report.ie_cause}")
    if check.flaky:  # passed by chance: "expected AC, got WA" would call it plainly wrong
        each = ", ".join(run_summary(r) for r in check.runs)
        check.problems.append(f"{FLAKY}its tests' outcomes differ across {len(check.runs)} "
                              f"runs ({each}); the tests that differed: "
                              + "; ".join(f"{t} {', '.join(o)}" for t, o in check.flaky.items()))
    elif check.expect == "not AC":
        if v is Verdict.AC:
            check.problems.append("the starter is accepted: it must fail")
        elif v in (Verdict.CE, Verdict.IE) and not _leaves_out_what_tests_call(check, report):
            check.problems.append(f"the starter must import and fail its tests, got {v}")
    elif str(v) != check.expect:
        check.problems.append(f"expected {check.expect}, got {v}")
    verdicts = check.verdicts()
    for name in check.caught_by:
        if name not in verdicts:
            check.problems.append(f"caught-by names {name!r}, which is not a test")
        elif verdicts[name] in ("AC", "SKIP"):
            check.problems.append(f"caught-by {name} passed")


def _static_and_place_checks(p: Problem, res: CheckResult) -> None:
    """What is checked before anything is graded: the folder's own rules, then whether this
    machine can grade it at all."""
    _static_checks(p, res)
    if not res.errors:
        _static_hint_checks(p, res)
    if not res.errors and p.language == "cuda":
        from judge.authoring.import_check import _needs_a_gpu_here
        from judge.grading.cpp.grade import NEEDS_GPU
        if _needs_a_gpu_here(p):  # no verdict here, and none false (grading/cpp/cuda.py)
            res.errors.append(f"not checked here: {NEEDS_GPU}")


def check_problem(problem: Problem | str, *, device: str = "auto",
                  on_progress: Callable[[str, Report | None], None] | None = None,
                  graded: Callable[[Problem, Path], Report | None] | None = None,
                  reference_runs: int = REFERENCE_RUNS) -> CheckResult:
    """`graded(problem, path)`: a report the caller already has for a known submission's file
    (None: grade it here), so that what was graded once is not graded again to be checked.
    `reference_runs`: how many times an imported problem's reference is run besides its
    grading (its verdicts are its own tests' outcomes, which may be luck; 1: the grading only).
    A native problem's reference is graded once: its observations are what every submission
    is compared with, cached from one run."""
    from judge.grading.grader import grade
    from judge.grading.proxied import is_proxied

    res = CheckResult(name=str(problem if not isinstance(problem, Problem) else problem.name))
    try:
        p = load_problem(problem)
    except ProblemError as e:
        res.errors.append(str(e))
        return res
    res.problem, res.name = p, p.name
    _static_and_place_checks(p, res)
    if res.errors:
        return res

    def run(check: SubmissionCheck) -> SubmissionCheck:
        if on_progress:
            on_progress(check.label, None)
        known = graded(p, check.path) if graded is not None else None
        check.report = known if known is not None else grade(
            p, check.path.read_text(encoding="utf-8"), device=device, reveal_hidden=True)
        _verdict_problems(check, check.report)
        if on_progress:
            on_progress(check.label, check.report)
        res.submissions.append(check)
        return check

    ref = SubmissionCheck("reference", p.reference_path, "AC")
    if is_proxied(p) and reference_runs > 1:  # its tests' verdicts may be the luck of a run
        ref.runs = [reference_run(p, device) for _ in range(reference_runs)]
    run(ref)
    if not ref.ok:  # every other grading would be an internal error too (flaky: by chance)
        return res
    _check_reference_observations(p, device, res)
    run(SubmissionCheck("starter", p.starter_path, "not AC"))
    for path in p.submissions("accepted"):
        run(SubmissionCheck(f"accepted/{path.name}", path, "AC"))
    for path in p.submissions("wrong_answer"):
        expect, caught = parse_header(path.read_text(encoding="utf-8"))
        if expect is None or expect not in Verdict.__members__ or expect == "AC":
            c = SubmissionCheck(f"wrong_answer/{path.name}", path, str(expect))
            c.problems.append("its header must name the verdict it gets: # expect: WA "
                              "(WA, RE, TLE, MLE, OLE or CE)")
            res.submissions.append(c)
            continue
        _hint_met(p, run(SubmissionCheck(f"wrong_answer/{path.name}", path, expect, caught)))
    return res
