"""Run a problem's tests against one solution, record the `observe` calls, compare with expected ones.

This file runs in two interpreters and imports nothing outside the standard library and pytest:

* inside Pyodide (CPython 3.14 in the browser's Web Worker), for the page's Run button: the
  expected observations are the reference's, sent by the server;
* in CPython on the server, in a child process, to record the reference's own observations of the
  public tests when the grading core offers none (see web/expectations.py).

The result has the shape of the grading core's Report (verdict, tests, first_failure,
compile_error, timings) so that the page renders both the same way. It is a convenience: the
server's verdict is the one that counts.

Entry points: `run(spec)` and, for a child process, `main()` (JSON spec on stdin, JSON on stdout).
"""

from __future__ import annotations

import ast
import importlib
import io
import json
import math
import os
import shutil
import sys
import time
import tokenize
import traceback

# Modules the browser cannot import; code that needs them is graded by Submit only.
BROWSER_MISSING = {"torch", "numpy", "safetensors", "transformers", "tokenizers", "triton"}

_run_counter = [0]
_added_paths: list[str] = []


# ---------------------------------------------------------------- observations


def to_json_data(value, where="value"):
    """Return `value` as JSON data (tuples become lists) or raise TypeError saying what is wrong."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (list, tuple)):
        return [to_json_data(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"observe(): {where} has a key {k!r} that is not a str")
            out[k] = to_json_data(v, f"{where}[{k!r}]")
        return out
    raise TypeError(
        f"observe(): {where} is a {type(value).__name__}; observations must be JSON data "
        "(None, bool, int, float, str, lists, tuples, dicts with str keys)"
    )


def same_value(expected, got, rel=1e-6, abs_tol=1e-6) -> bool:
    """Floats (and int/float pairs) within tolerance, everything else exactly; bools stay bools."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(expected) is type(got) and expected == got
    num = (int, float)
    if isinstance(expected, num) and isinstance(got, num):
        if isinstance(expected, int) and isinstance(got, int):
            return expected == got
        if math.isnan(expected) or math.isnan(got):
            return math.isnan(expected) and math.isnan(got)
        return math.isclose(expected, got, rel_tol=rel, abs_tol=abs_tol)
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(same_value(e, g) for e, g in zip(expected, got))
    if isinstance(expected, dict) and isinstance(got, dict):
        return expected.keys() == got.keys() and all(same_value(expected[k], got[k]) for k in expected)
    return type(expected) is type(got) and expected == got


def first_divergence(expected: list, got: list, complete: bool):
    """The first (label, expected, got) difference between two observation lists, or None.

    `complete` says the test ran to its end; if not, only the recorded prefix is compared.
    """
    for i, (e, g) in enumerate(zip(expected, got)):
        e_label, e_value = e
        g_label, g_value = g
        if e_label != g_label:
            return {
                "index": i,
                "label": e_label,
                "expected": e_value,
                "got": g_value,
                "message": f"observation #{i + 1}: the reference observed {e_label!r} here, "
                f"your code's run observed {g_label!r}",
            }
        if not same_value(e_value, g_value):
            return {"index": i, "label": e_label, "expected": e_value, "got": g_value,
                    "message": f"{e_label}: expected {_short(e_value)}, got {_short(g_value)}"}
    if not complete:
        return None
    if len(got) < len(expected):
        e_label, e_value = expected[len(got)]
        return {"index": len(got), "label": e_label, "expected": e_value, "got": None,
                "message": f"the test recorded {len(got)} observations, the reference "
                f"{len(expected)}; the first missing one is {e_label!r}"}
    if len(got) > len(expected):
        g_label, g_value = got[len(expected)]
        return {"index": len(expected), "label": g_label, "expected": None, "got": g_value,
                "message": f"the test recorded {len(got)} observations, the reference "
                f"{len(expected)}; the first extra one is {g_label!r}"}
    return None


def _short(value, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ---------------------------------------------------------------- the grading Python's grammar
#
# The page's Python (Pyodide, 3.14) is newer than the one that grades Submit (the server says
# which: `grading_python` in /api/problems/{id}). Code that only the newer grammar accepts would
# pass Run and get CE on Submit, so the file is also parsed with the older grammar.
#
# What `ast.parse(feature_version=...)` catches, on 3.14 parsing for 3.11: PEP 695
# (`type X = ...`, `def f[T]()`, `class C[T]`), PEP 696 defaults (`[T = int]`), PEP 758
# `except A, B:` (reported at the block's end; corrected below) and PEP 750 t-strings.
# What it lets through: PEP 701 f-strings (the enclosing quote reused inside a replacement
# field, a backslash or a comment in one, a field over two lines in a single-quoted f-string),
# checked here from the tokens instead; whatever else has no version gate in the parser; and a
# newer standard library (`itertools.batched`, `typing.override`), RE on the server, not CE.
# Where the grading Python is the newer one nothing can be checked here. The message is this
# parser's (3.11 often says just "invalid syntax"); the line is the one the grading parser names.


def syntax_error_fields(exc: SyntaxError, filename: str) -> dict:
    """CE fields of a SyntaxError, exactly as judge.runner.errors.describe_syntax_error makes
    them on the server (this file may import nothing from the judge; tests compare the two)."""
    name = os.path.basename(filename)
    line = exc.lineno if isinstance(exc.lineno, int) else None
    text = (exc.text or "").strip()
    trace = f'  File "{name}", line {line}' if line else f'  File "{name}"'
    if text:
        trace += f"\n    {text}"
    exc_type = type(exc).__name__
    return {"exc_type": exc_type, "line": line,
            "message": f"{exc.msg} (line {line})" if line else str(exc.msg),
            "traceback": f"{trace}\n{exc_type}: {exc.msg}"}


def parse_version(value) -> tuple | None:
    """(3, 11) from "3.11" or [3, 11]; None when absent or not a version."""
    if isinstance(value, str):
        value = value.split(".")[:2]
    try:
        major, minor = (int(x) for x in value)
    except (TypeError, ValueError):
        return None
    return (major, minor)


def first_syntax_error(source: str, filename: str, target=None):
    """(error, only_in_target): the syntax error the grading Python (`target`, e.g. "3.11")
    would report first, or None; only_in_target says this interpreter accepts that code."""
    own = None
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte, before 3.12
        own = exc
    target = parse_version(target)
    if target is None or target >= sys.version_info[:2] or isinstance(own, ValueError):
        return own, False
    found = []
    try:
        ast.parse(source, filename, feature_version=target)
    except SyntaxError as exc:
        found.append(_except_line_fixed(exc, source))
    except ValueError:
        pass
    fstring = _fstring_error(source, filename)
    if fstring is not None:
        found.append(fstring)
    if not found:
        return own, False
    # Both parsers stop at their first error; the grading one's tokenizer meets an f-string as
    # soon as it reaches it, so the earliest line wins.
    older = min(found, key=lambda e: e.lineno or 0)
    same = own is not None and (own.lineno, own.msg) == (older.lineno, older.msg)
    return older, not same


def _except_line_fixed(exc: SyntaxError, source: str) -> SyntaxError:
    """A version gate on a `try` statement is reported at the statement's end (`except A, B:`
    parsed for < 3.14, `except*` for < 3.11); the grading Python reports the `except` line."""
    msg = str(exc.msg)
    if msg.startswith("except expressions without parentheses"):
        def gated(node, h):
            segment = ast.get_source_segment(source, h.type) if h.type is not None else None
            return isinstance(h.type, ast.Tuple) and not (segment or "(").startswith("(")
    elif msg.startswith("Exception groups are only supported"):
        def gated(node, h):
            return type(node).__name__ == "TryStar"
    else:
        return exc
    # The statement is whole before the reported line (the next statement's first token) or
    # on it (the file's end); whatever comes after it may not parse.
    lines = source.splitlines(keepends=True)
    for cut in (len(lines), exc.lineno or 0, (exc.lineno or 1) - 1):
        try:
            tree = ast.parse("".join(lines[:cut]))
            break
        except (SyntaxError, ValueError):
            continue
    else:
        return exc
    rows = sorted(h.lineno for node in ast.walk(tree) for h in getattr(node, "handlers", ())
                  if isinstance(h, ast.ExceptHandler) and gated(node, h))
    if rows:
        exc.lineno, exc.end_lineno = rows[0], rows[0]
        exc.offset, exc.end_offset = 1, None
        exc.text = source.splitlines()[rows[0] - 1]
    return exc


_FSTRING_KINDS = {k: {getattr(tokenize, f"{p}STRING_{k}") for p in ("F", "T")
                      if hasattr(tokenize, f"{p}STRING_{k}")}
                  for k in ("START", "MIDDLE", "END")}
_TRIPLE = ('"' * 3, "'" * 3)


class _FString:
    def __init__(self, tok):
        body = tok.string.lstrip("fFrRbBuUtT")
        self.quote = body[:3] if body[:3] in _TRIPLE else body[:1]
        self.depth = 0          # open braces: > 0 inside a replacement field
        self.field_row = None   # where the current replacement field opened
        self.pending = None     # (message, offending token): reported where the string ends


def _fstring_error(source: str, filename: str) -> SyntaxError | None:
    """The first f-string that only PEP 701 (Python 3.12) allows, as a SyntaxError on the line
    the 3.11 parser names (the string's last line for a backslash or a comment, else the
    token's). None where the tokenizer reads an f-string as one STRING: there compile() has
    judged it with the old rules already."""
    if not _FSTRING_KINDS["START"]:
        return None
    lines = source.splitlines()

    def error(msg, row, col):
        text = lines[row - 1] if 0 < row <= len(lines) else None
        return SyntaxError(msg, (filename, row, col + 1, text))

    stack: list[_FString] = []
    found = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            kind = tok.type
            if not stack and kind not in _FSTRING_KINDS["START"]:
                continue
            if kind in _FSTRING_KINDS["MIDDLE"] or kind in _FSTRING_KINDS["END"]:
                around = stack[:-1]  # the innermost string's own text is not in a field of it
            else:
                around = stack[:-1] + [f for f in stack[-1:] if f.depth > 0]
            for f in around:
                if f.quote in tok.string:
                    found.append(error(f"f-string: a replacement field uses {f.quote}, the "
                                       "quote the f-string is written with (Python 3.12+)",
                                       tok.start[0], tok.start[1]))
                if len(f.quote) == 1 and f.field_row is not None and kind != tokenize.NL \
                        and (tok.start[0], tok.end[0]) != (f.field_row, f.field_row):
                    found.append(error("f-string: a replacement field spans lines in a "
                                       "single-quoted f-string (Python 3.12+)", f.field_row, 0))
            if around and stack[0].pending is None:
                if kind == tokenize.COMMENT:
                    stack[0].pending = ("f-string expression part cannot include '#'", tok)
                elif "\\" in tok.string:
                    stack[0].pending = ("f-string expression part cannot include a backslash",
                                        tok)
            if kind in _FSTRING_KINDS["START"]:
                stack.append(_FString(tok))
            elif kind in _FSTRING_KINDS["END"]:
                done = stack.pop()
                if not stack and done.pending is not None:
                    msg, bad = done.pending
                    row = tok.end[0]
                    found.append(error(msg, row, bad.start[1] if bad.start[0] == row else 0))
            elif kind == tokenize.OP and tok.string in ("{", "}"):
                top = stack[-1]
                if tok.string == "{":
                    if top.depth == 0:
                        top.field_row = tok.start[0]
                    top.depth += 1
                elif top.depth > 0:
                    top.depth -= 1
                    if top.depth == 0:
                        top.field_row = None
    except (tokenize.TokenError, SyntaxError):
        pass  # a broken file: compile() reports it
    return min(found, key=lambda e: e.lineno) if found else None


# ---------------------------------------------------------------- files and modules


def _write_files(root: str, files: dict) -> None:
    for rel, text in files.items():
        rel = rel.replace("\\", "/").lstrip("/")
        if ".." in rel.split("/"):
            raise ValueError(f"bad file name {rel!r}")
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


def _purge_modules(names: set, root_prefix: str) -> None:
    """Forget earlier runs' modules, or the next run would test the old code."""
    for name, mod in list(sys.modules.items()):
        top = name.split(".")[0]
        file = getattr(mod, "__file__", None) or ""
        if top in names or (root_prefix and file.startswith(root_prefix)):
            del sys.modules[name]
    importlib.invalidate_caches()


def _missing_module(exc: BaseException):
    """The browser-missing top-level module an ImportError is about, or None."""
    while exc is not None:
        if isinstance(exc, ImportError):
            name = (getattr(exc, "name", None) or "").split(".")[0]
            if name in BROWSER_MISSING:
                return name
        exc = exc.__cause__ or exc.__context__
    return None


def _short_traceback(exc: BaseException, keep_prefixes: tuple) -> str:
    """The traceback limited to frames from the solution and the tests (not pytest's own)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if any(f.filename.startswith(p) for p in keep_prefixes)]
    lines = traceback.format_list(frames) if frames else []
    lines += traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).rstrip()
    for prefix in keep_prefixes:  # show "lru.py" and "public/test_x.py", not the temp folder
        text = text.replace(prefix.rstrip("/") + "/", "")
    return text


def _syntax_fields(exc: BaseException, filename: str) -> dict:
    if isinstance(exc, SyntaxError):
        return syntax_error_fields(exc, filename)
    # A NUL byte before Python 3.12, as the server words it (judge/grading.py).
    return {"exc_type": type(exc).__name__, "line": None, "message": str(exc),
            "traceback": None}


def _import_error_fields(exc: BaseException, path: str) -> dict:
    """CE fields of a file that compiles but fails to import, in the words of the server's
    judge.runner.errors.describe_import_error: only the student's frames, named by base name."""
    t = type(exc)
    mod = getattr(t, "__module__", "") or ""
    exc_type = t.__qualname__ if mod == "builtins" else f"{mod}.{t.__qualname__}"
    try:
        message = str(exc)
    except Exception:
        message = "<the exception's str() failed>"
    if len(message) > 2000:
        message = message[:2000] + " ..."
    try:
        frames = [f for f in traceback.extract_tb(exc.__traceback__)
                  if os.path.realpath(f.filename) == os.path.realpath(path)]
    except Exception:
        frames = []
    name = os.path.basename(path)
    lines = []
    for f in frames:
        lines.append(f'  File "{name}", line {f.lineno}, in {f.name}')
        if f.line:
            lines.append(f"    {f.line.strip()}")
    head = f"{exc_type}: {message}"
    return {"exc_type": exc_type, "message": message,
            "line": frames[-1].lineno if frames else None,
            "traceback": "\n".join(lines) + "\n" + head if lines else head}



# ---------------------------------------------------------------- pytest plugin


def _make_plugin(state: dict, tests_root: str):
    import pytest

    def test_name(nodeid: str) -> str:
        return nodeid.replace("\\", "/")

    class KvpPlugin:
        @pytest.fixture
        def observe(self, request):
            records = state["obs"].setdefault(test_name(request.node.nodeid), [])

            def observe(label, value):
                records.append([str(label), to_json_data(value)])

            return observe

        def pytest_collectreport(self, report):
            if report.failed:
                state["collect_errors"].append(report)

        def pytest_collection_modifyitems(self, items):
            state["order"] = [test_name(it.nodeid) for it in items]

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            yield
            if call.excinfo is not None:
                state["excinfo"][(test_name(item.nodeid), call.when)] = call.excinfo

        def pytest_runtest_logreport(self, report):
            name = test_name(report.nodeid)
            state["reports"].setdefault(name, {})[report.when] = report

    return KvpPlugin()


# ---------------------------------------------------------------- the run


def _result_row(name, state, expected, keep, weight):
    suite = name.split("/", 1)[0]
    phases = state["reports"].get(name, {})
    got = state["obs"].get(name, [])
    row = {"name": name, "suite": suite, "verdict": "AC", "time_s": 0.0, "weight": weight,
           "failure": None, "observations": len(got)}
    call = phases.get("call")
    if call is not None:
        row["time_s"] = round(call.duration, 4)
    failed = next((phases[w] for w in ("setup", "call", "teardown")
                   if w in phases and phases[w].failed), None)
    skipped = next((phases[w] for w in ("setup", "call") if w in phases and phases[w].skipped), None)

    if failed is None and skipped is not None:
        reason = skipped.longrepr[2] if isinstance(skipped.longrepr, tuple) else str(skipped.longrepr)
        row.update(verdict="skipped", failure={"message": reason.replace("Skipped: ", "")})
        return row

    exp = None if expected is None else expected.get(name)
    if failed is None:
        if expected is None:
            return row
        if exp is None:
            row.update(verdict="IE", failure={"message": "the server sent no reference "
                                              "observations for this test"})
            return row
        div = first_divergence(exp, got, complete=True)
        if div:
            row.update(verdict="WA", failure=div)
        return row

    # The test failed: an earlier divergence explains more than the failure it led to.
    if exp is not None:
        div = first_divergence(exp, got, complete=False)
        if div:
            row.update(verdict="WA", failure=div)
            return row
    excinfo = state["excinfo"].get((name, failed.when))
    exc = excinfo.value if excinfo is not None else None
    if exc is not None and _missing_module(exc):
        mod = _missing_module(exc)
        row.update(verdict="skipped", failure={
            "message": f"needs {mod}, which the browser cannot run: Submit grades it on the server"})
        return row
    tb = _short_traceback(exc, keep) if exc is not None else str(failed.longrepr)
    if isinstance(exc, AssertionError):
        msg = str(exc).split("\n")[0] or "assertion failed"
        row.update(verdict="WA", failure={"message": msg, "traceback": tb})
    else:
        what = type(exc).__name__ if exc is not None else "error"
        msg = (f"{what}: {exc}" if str(exc) else what) if exc is not None else "error"
        row.update(verdict="RE", failure={"message": msg, "traceback": tb})
    if failed.when != "call":
        row["failure"]["message"] = f"({failed.when}) " + row["failure"]["message"]
    return row


def run(spec: dict) -> dict:
    """Run `spec["tests"]` against `spec["source"]` imported as `spec["module"]`.

    spec keys: workdir, module, source, tests ({"public/test_x.py": text, helpers...}),
    handbook ({module name: source}), expected ({test name: [[label, value], ...]} or None to
    only record), weights ({test name: weight}, optional), python (the grading Python, "3.11",
    optional: its grammar decides CE too).
    """
    started = time.perf_counter()
    module = spec["module"]
    tests = spec["tests"]
    handbook = spec.get("handbook") or {}
    expected = spec.get("expected")
    weights = spec.get("weights") or {}

    result = {"verdict": None, "score": 0.0, "tests": [], "first_failure": None,
              "compile_error": None, "unsupported": None, "observations": {}, "output": "",
              "timings": {}}

    # CE as the server decides it: the file must be UTF-8 text and compile under the grading
    # Python's grammar (spec["python"], e.g. "3.11"), then import; in the server's words.
    filename = f"{module}.py"
    only_there = False
    try:
        spec["source"].encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate from the editor
        ce = {"exc_type": "UnicodeError", "line": None, "traceback": None,
              "message": f"the file is not valid UTF-8 text: {exc.reason}"}
    else:
        err, only_there = first_syntax_error(spec["source"], filename, spec.get("python"))
        ce = None if err is None else _syntax_fields(err, filename)
    if ce is not None:
        result["verdict"] = "CE"
        result["compile_error"] = ce
        if only_there:
            there = ".".join(map(str, parse_version(spec["python"])))
            here = f"{sys.version_info[0]}.{sys.version_info[1]}"
            result["compile_error"]["hint"] = (
                f"Submit grades with Python {there}, which does not accept this syntax (the "
                f"page's Python {here} does).")
        result["timings"]["total_s"] = round(time.perf_counter() - started, 4)
        return result

    _run_counter[0] += 1
    base = os.path.abspath(spec.get("workdir") or "kvp-run")
    root = os.path.join(base, f"run{_run_counter[0]}")
    shutil.rmtree(base, ignore_errors=True)
    sol_dir, hb_dir, tests_dir = (os.path.join(root, d) for d in ("solution", "handbook", "tests"))
    _write_files(sol_dir, {f"{module}.py": spec["source"]})
    _write_files(hb_dir, {f"{name}.py": text for name, text in handbook.items()})
    _write_files(tests_dir, tests)

    test_modules = {os.path.splitext(os.path.basename(p))[0] for p in tests}
    _purge_modules({module, *handbook, *test_modules, "conftest"}, base)
    for p in _added_paths:
        while p in sys.path:
            sys.path.remove(p)
    _added_paths[:] = [sol_dir, hb_dir]
    sys.path[:0] = _added_paths

    keep = (sol_dir, tests_dir)
    # ... then it must import.
    source_path = os.path.join(sol_dir, filename)
    try:
        importlib.import_module(module)
    except BaseException as exc:  # noqa: BLE001 - the student's code may raise anything
        missing = _missing_module(exc)
        if missing:
            result["verdict"] = "unsupported"
            result["unsupported"] = (
                f"Your code imports {missing}, which the browser cannot run. "
                "Press Submit: the server grades it with the full test suite.")
        else:
            result["verdict"] = "CE"
            result["compile_error"] = _import_error_fields(exc, source_path)
        result["timings"]["total_s"] = round(time.perf_counter() - started, 4)
        return result

    import pytest

    state = {"obs": {}, "reports": {}, "excinfo": {}, "collect_errors": [], "order": []}
    plugin = _make_plugin(state, tests_dir)
    out = io.StringIO()
    old_out, old_err, old_cwd = sys.stdout, sys.stderr, os.getcwd()
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    t0 = time.perf_counter()
    try:
        sys.stdout = sys.stderr = out
        os.chdir(tests_dir)
        pytest.main([tests_dir, "-q", "-p", "no:cacheprovider", "-p", "no:stepwise",
                     "--capture=sys", "--rootdir", tests_dir, "--import-mode=prepend",
                     "-o", "python_files=test_*.py", "-o", "addopts=", "-W", "ignore"],
                    plugins=[plugin])
    finally:
        sys.stdout, sys.stderr = old_out, old_err
        os.chdir(old_cwd)
    run_s = time.perf_counter() - t0
    result["output"] = out.getvalue()[-20000:]

    rows = [_result_row(n, state, expected, keep, weights.get(n, 1)) for n in state["order"]]
    for rep in state["collect_errors"]:
        text = str(rep.longrepr)
        mod = next((m for m in BROWSER_MISSING
                    if f"No module named '{m}" in text or f'No module named "{m}' in text), None)
        name = rep.nodeid.replace("\\", "/")
        if mod:
            rows.append({"name": name, "suite": name.split("/", 1)[0], "verdict": "skipped",
                         "time_s": 0.0, "weight": 0, "failure": {
                             "message": f"this file needs {mod}, which the browser cannot run: "
                             "Submit grades it on the server"}})
        else:
            rows.append({"name": name, "suite": name.split("/", 1)[0], "verdict": "RE",
                         "time_s": 0.0, "weight": 1, "failure": {
                             "message": "the test file could not be collected",
                             "traceback": text[-4000:]}})
    result["tests"] = rows
    result["observations"] = state["obs"]

    counted = [r for r in rows if r["verdict"] != "skipped"]
    total = sum(r["weight"] for r in counted)
    passed = sum(r["weight"] for r in counted if r["verdict"] == "AC")
    result["score"] = round(passed / total, 4) if total else 0.0
    first = next((r for r in rows if r["verdict"] not in ("AC", "skipped")), None)
    if first is not None:
        result["verdict"] = first["verdict"]
        result["first_failure"] = dict(first["failure"] or {}, test=first["name"],
                                       verdict=first["verdict"])
    else:
        result["verdict"] = "AC" if counted else "skipped"
    result["timings"] = {"total_s": round(time.perf_counter() - started, 4),
                         "public_s": round(run_s, 4)}
    return result


def to_json(result: dict) -> str:
    """JSON text for the result; NaN and infinities become strings so any JSON parser reads it."""
    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return repr(v)
        if isinstance(v, list):
            return [clean(x) for x in v]
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        return v
    return json.dumps(clean(result))


def main() -> None:
    spec = json.loads(sys.stdin.read())
    result = run(spec)
    sys.stdout.write(to_json(result))


if __name__ == "__main__":
    main()
