"""Terminal output shared by `judge` (cli.py) and `practice/judge.py`: messages in en/zh
(judge/messages), colors when writing to a terminal, a progress bar fed by grade()'s events,
tables."""

from __future__ import annotations

import json
import locale
import os
import re
import sys
import unicodedata

from judge.cli.failure_text import FailureContext, headline, hint_lines, raised_at, traceback_text
from judge.cli.trace_text import trace_lines
from judge.judging.compare import NOTHING, value_at
from judge.messages import LANGS, translate, verdict_name

COLORS = {"green": "32", "red": "31", "yellow": "33", "dim": "2", "bold": "1", "cyan": "36"}
VERDICT_COLOR = {"AC": "green", "WA": "red", "RE": "red", "TLE": "yellow", "MLE": "yellow",
                 "OLE": "yellow", "CE": "red", "IE": "yellow", "NR": "dim", "SKIP": "dim"}


def default_lang() -> str:
    for var in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"):
        value = os.environ.get(var, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    try:
        loc = locale.getlocale()[0] or ""
    except ValueError:
        loc = ""
    return "zh" if loc.lower().startswith("zh") else "en"


def width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


class Console:
    def __init__(self, lang: str | None = None, stream=None, color: bool | None = None):
        self.lang = lang if lang in LANGS else default_lang()
        self.out = stream or sys.stdout
        tty = hasattr(self.out, "isatty") and self.out.isatty()
        self.color = tty and not os.environ.get("NO_COLOR") if color is None else color

    def t(self, text: str, **kw) -> str:
        """`text` (English) in the console's language (judge/messages)."""
        return translate(text, self.lang, **kw)

    def c(self, text: str, color: str) -> str:
        return f"\033[{COLORS[color]}m{text}\033[0m" if self.color and color else text

    def verdict(self, v: str) -> str:
        return self.c(v, VERDICT_COLOR.get(v, ""))

    def print(self, text: str = "") -> None:
        print(text, file=self.out)

    def table(self, headers: list[str], rows: list[list[str]], colors=None) -> None:
        """Left-aligned columns; `colors(row_index, col_index, text)` may color a cell."""
        widths = [max([width(h)] + [width(r[i]) for r in rows]) for i, h in enumerate(headers)]

        def line(cells, row=None):
            parts = []
            for i, cell in enumerate(cells):
                pad = " " * (widths[i] - width(cell))
                text = colors(row, i, cell) if colors and row is not None else cell
                parts.append(text + pad)
            return "  ".join(parts).rstrip()

        self.print(self.c(line(headers), "bold"))
        for n, r in enumerate(rows):
            self.print(line(r, n))


class Progress:
    """A one-line progress bar on stderr, fed with grade()'s events (silent when not a tty)."""

    def __init__(self, console: Console, stream=None):
        self.console, self.stream = console, stream or sys.stderr
        self.enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.total = 0
        self.verdicts: dict[str, str] = {}  # a test's later TEST_FINISHED replaces its first

    def __call__(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "suite_started":
            self.total += len(event.get("tests", []))
        elif kind == "test_finished":
            self.verdicts[str(event.get("test"))] = str(event.get("verdict"))
        elif kind == "done":
            if self.enabled:
                self.stream.write("\r\033[K")
                self.stream.flush()
            return
        else:
            return
        if self.enabled and self.total:
            n = 30
            fill = min(n, int(n * len(self.verdicts) / self.total))
            bar = "#" * fill + "." * (n - fill)
            name = defang(str(event.get("test", ""))[-50:]) if kind == "test_finished" else ""
            self.stream.write(f"\r\033[K[{bar}] {len(self.verdicts)}/{self.total} {name}")
            self.stream.flush()


# C0 and C1 control characters other than newline and tab: a terminal acts on them (cursor moves,
# colours, clearing lines), so text a submission shaped could redraw the report.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def defang(value):
    """`value` with every control character in its strings shown as an escape (`\\x1b`)."""
    if isinstance(value, str):
        return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", value)
    if isinstance(value, list):
        return [defang(v) for v in value]
    if isinstance(value, dict):
        return {defang(k): defang(v) for k, v in value.items()}
    return value


def _short(value, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def problem_labels(problem, lang: str) -> dict[str, str]:
    """The problem's labels table in `lang`, {} where it is broken (`judge check` says how)."""
    from judge.problem import ProblemError
    try:
        return problem.labels(lang)
    except ProblemError:
        return {}


def print_report(con: Console, report: dict, trace_steps: int | None = 4,
                 labels: dict[str, str] | None = None,
                 context: FailureContext | None = None, table: bool = True) -> None:
    """The per-test table, the first failure (with the last `trace_steps` steps of its pool
    timelines; None: all of them) and the first hint it meets, the verdict and the score.
    `labels`: the problem's observation labels in the console's language (Problem.labels),
    English where it has none; `context`: the student's file and the statement
    (failure_text.FailureContext); `table=False` when the tests were shown as they finished."""
    from judge.judging.labels import LabelTable

    report = defang(report)
    context = context or FailureContext()
    label_table = LabelTable(labels if con.lang != "en" else None)
    rows = [[t["name"], t["verdict"], "" if t["time_s"] is None else f"{t['time_s']:.3f}s"]
            for t in report["tests"]]
    if rows and table:
        con.table([con.t("test"), con.t("result"), con.t("time")], rows,
                  colors=lambda r, i, cell: con.verdict(cell) if i == 1 else cell)
    con.print()
    ce = report.get("compile_error")
    if ce:
        con.print(con.c(con.t("Your file does not import"), "red"))
        con.print(ce.get("traceback") or f"{ce.get('exc_type')}: {ce.get('message')}")
        con.print()
    ff = report.get("first_failure")
    if ff and report["verdict"] != "IE":
        _print_first_failure(con, ff, report, trace_steps, label_table, context)
    if report.get("output") and report["verdict"] != "AC":
        con.print(con.c(con.t("What your code printed (public tests, last lines)"), "dim"))
        con.print(report["output"].rstrip()[-1500:])
        con.print()
    _print_verdict(con, report)


def _print_first_failure(con: Console, ff: dict, report: dict, trace_steps: int | None,
                         label_table, context: FailureContext) -> None:
    """The first failure: what it observed (or raised), where, its pools' last steps, and the
    first hint it meets; of a hidden test only that it failed."""
    hidden = ff["test"].startswith("hidden/")
    said = con.t("failed") if ff.get("kind") == "failed" else \
        f"{ff['verdict']}, {verdict_name(ff['verdict'], con.lang)}"
    con.print(con.c(f"{con.t('First failure')}: {ff['test']} ({said})", "bold"))
    if ff.get("label") is not None:
        con.print(f"  {con.t('observation')}: {label_table.text(str(ff['label']))}")
    if not hidden and ff.get("kind") == "observation":
        _print_observed(con, ff)
    if ff.get("kind") != "observation":
        _print_raised(con, ff, context)
    if ff.get("where") and not hidden:
        con.print(f"  {con.t('where')}: {ff['where']}")
    if isinstance(ff.get("trace"), dict) and not hidden:
        for line in trace_lines(ff["trace"], last=trace_steps, lang=con.lang,
                                paint=lambda s: con.c(s, "red")):
            con.print("  " + line)
    if hidden:
        con.print(con.c("  " + con.t("(hidden test: only that it failed is shown, not how)"),
                        "dim"))
    for line in hint_lines(report.get("hints") or [], 1, context, con.lang):
        con.print(con.c("  " + line, "cyan"))
    con.print()


def _print_observed(con: Console, ff: dict) -> None:
    """An observation that parted from the reference's: expected and got, and where inside
    them they first differ."""
    names = [con.t("expected"), con.t("got")]
    pad = max(width(n) for n in names)
    if ff.get("path"):
        e, g = (value_at(ff.get(k), ff["path"]) for k in ("expected", "got"))
        e, g = (con.t("nothing") if v is NOTHING else _short(v) for v in (e, g))
        con.print(f"  {con.t('at')} {ff['path']}: {con.t('expected')} {e}, "
                  f"{con.t('got')} {g}")
    for name, key in zip(names, ("expected", "got")):
        con.print(f"  {name}:{' ' * (pad - width(name))} {_short(ff.get(key))}")


def _print_verdict(con: Console, report: dict) -> None:
    """The closing lines: a judge's own error, the sandbox layers missing here, the verdict
    and the score (and what the score counts)."""
    if report["verdict"] == "IE":
        con.print(con.c(con.t("Internal error in the judge (not your fault); please report it."),
                        "yellow"))
    missing = (report.get("provenance") or {}).get("missing_layers")
    if missing:
        con.print(con.c(con.t("Sandbox layers missing here: {layers}. Graded anyway, with weaker "
                              "isolation: fine for your own code (`judge doctor` says why).",
                              layers=", ".join(missing)), "yellow"))
    v = report["verdict"]
    con.print(f"{con.t('Verdict')}: {con.verdict(v)} ({verdict_name(v, con.lang)})   "
              f"{con.t('score')}: {report['score'] * 100:.0f}%")
    suites = {t["suite"] for t in report["tests"]}
    if report.get("scored_suites") == ["hidden"] and len(suites) > 1:
        con.print(con.c(con.t("The score counts the hidden tests only; the public tests are for "
                              "practice."), "dim"))


def _print_raised(con: Console, ff: dict, context: FailureContext) -> None:
    """The exception's headline (type and message), the place in the student's own file it
    was raised, the rest of a longer message, and the traceback of the student's frames."""
    head = headline(ff)
    if head:
        con.print("  " + con.c(head, "red"))
    rest = str(ff.get("message") or "").split("\n")[1:]
    if rest:
        con.print("  " + "\n  ".join(rest))
    at = raised_at(ff, context, con.lang)
    if at:
        con.print("  " + at)
    tb = traceback_text(ff, context)
    if tb:
        con.print("  " + tb.replace("\n", "\n  "))


CELL = {"AC": ".", "WA": "W", "RE": "R", "TLE": "T", "MLE": "M", "OLE": "O", "CE": "C",
        "IE": "I", "NR": "-", "SKIP": "s"}


def print_check(con: Console, result) -> None:
    """Submissions x tests for one problem (tests numbered, legend below), then what is wrong."""
    tests = result.tests
    rows = []
    for row in result.table():
        cells = [row["submission"], row["expect"], row["verdict"] or "-"]
        cells += [CELL.get(row["tests"].get(t, ""), " ") for t in tests]
        rows.append(cells)
    if rows:
        heads = [con.t("submission"), con.t("expect"), con.t("result")]
        heads += [str(i + 1) for i in range(len(tests))]

        def color(r, i, cell):
            if i == 2:
                return con.verdict(cell)
            if i > 2:
                return con.c(cell, "green" if cell == "." else "dim" if cell in "-s" else "red")
            return cell

        con.table(heads, rows, colors=color)
        con.print(con.c("  " + "   ".join(f"{i + 1} {t}" for i, t in enumerate(tests)), "dim")
                  if len(tests) <= 3 else con.c(
                      "\n".join(f"  {i + 1:>2} {t}" for i, t in enumerate(tests)), "dim"))
        con.print(con.c("  . AC  W WA  R RE  T TLE  M MLE  O OLE  - not run  s skipped", "dim"))
    wrong = [s for s in result.submissions if s.label.startswith("wrong_answer/")]
    if result.problem is not None and result.problem.hints and wrong:
        met = [s for s in wrong if s.hints]
        con.print(con.t("hints: {met} of {n} known-wrong files meet a hint at their first failure",
                        met=len(met), n=len(wrong)))
        for s in met:
            con.print(con.c(f"  {s.label} -> {', '.join(s.hints)}", "dim"))
    from judge.authoring.check import FLAKY

    _print_flaky(con, result)
    for s in result.submissions:
        for p in s.problems:
            if not (s.flaky and p.startswith(FLAKY)):  # said above, in the reader's words
                con.print(con.c(f"  {s.label}: {p}", "red"))
    for e in result.errors:
        con.print(con.c(f"  {e}", "red"))
    for w in result.warnings:
        con.print(con.c(f"  {con.t('warnings')}: {w}", "yellow"))
    outcome = "{name}: OK" if result.ok else "{name}: FLAKY" if result.flaky else \
        "{name}: FAILED"
    con.print(con.c(con.t(outcome, name=result.name), "green" if result.ok else "red"))


def _print_flaky(con: Console, result) -> None:
    """A reference whose tests' outcomes differed across its runs: each run in a word and, per
    test that differed, its outcome in each run (check.py, SubmissionCheck.flaky)."""
    from judge.authoring.check import failed_tests

    ref = next((s for s in result.submissions if s.label == "reference"), None)
    if ref is None or not ref.flaky:
        return
    runs = [con.t("{n} failed", n=bad) if (bad := failed_tests(r)) else con.t("passed")
            for r in ref.runs]
    con.print(con.c(con.t("the reference is flaky: {n} runs gave {runs}; the tests whose "
                          "outcome differed:", n=len(ref.runs), runs=con.t("; ").join(runs)),
                    "red"))
    for test, outcomes in ref.flaky.items():
        con.print(con.c(f"    {test}: {', '.join(outcomes)}", "red"))


def print_doctor(con: Console, info: dict) -> None:
    con.print(f"{con.t('Python')}: {info['python']}")
    con.print(f"{con.t('PyTorch')}: {info['torch'] or con.t('not installed')}")
    dev = info["device"] + (f" ({info['gpu_name']})" if info.get("gpu_name") else "")
    con.print(f"{con.t('device')}: {dev}")
    con.print(f"{con.t('sandbox')}: {info['sandbox_mode']}")
    for name, layer in info["layers"].items():
        mark = con.c("ok", "green") if layer["ok"] else con.c("--", "yellow")
        con.print(f"  {mark} {name} = {layer['ok']}: {layer['why']}")
    con.print(f"{con.t('C++ compilers and sanitizers')}:")
    for row in info.get("compilers", []):
        mark = con.c("ok", "green") if row["found"] else con.c("--", "yellow")
        con.print(f"  {mark} {row['name']}: {row['found'] or con.t('not found')} "
                  f"({con.t(row['for'])})")
    if info["missing"]:
        con.print(con.c(f"{con.t('missing layers (weaker isolation here)')}: "
                        f"{', '.join(info['missing'])}", "yellow"))
    if info["sandbox_mode"] == "none":
        meaning = ("No isolation beyond resource limits: fine for grading your own code, not for "
                   "grading other people's.")
    elif info["missing"]:
        meaning = ("Grading works; isolation is weaker than on a full server setup (see the "
                   "missing layers).")
    else:
        meaning = "Full isolation: safe to grade other people's submissions here."
    con.print(con.c(con.t(meaning), "bold"))
