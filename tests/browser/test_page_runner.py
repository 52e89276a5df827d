"""The page's runner (judge/browser/page_run.py) on the web fixture problem, run as Pyodide runs it
(tests/page_support.py): verdicts, a fresh import per Run, CE in the server's words, the
grading Python's grammar, and the modules the browser lacks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from page_support import default_root, page_spec, run_page

from judge import load_problem, public_expectations
from judge.judging.compare import compare, first_difference
from judge.judging.syntax import first_syntax_error
from judge.runner.events import ObservationError, to_json_data

from e2e.fake_grader import FIXTURES, PROBLEMS

FIX = PROBLEMS / "901-toy-lru"
PROBLEM = load_problem(FIX)


def runs(sources: list[str], expected=None, python=None) -> list[dict]:
    """Each source in turn, in one page (one interpreter, as the browser keeps it)."""
    return run_page(default_root(), [page_spec(PROBLEM, s, expected, python) for s in sources])


def run(source: str, expected=None, python=None) -> dict:
    return runs([source], expected, python)[0]


@pytest.fixture(scope="module")
def expected():
    return public_expectations(PROBLEM)


def test_accepted_and_wrong(expected):
    ok, bad = runs([(FIX / "submissions/accepted/lru_plain_dict.py").read_text(),
                    (FIX / "submissions/wrong_answer/get_does_not_refresh.py").read_text()],
                   expected)
    assert ok["verdict"] == "AC" and ok["score"] == 1.0
    ff = bad["first_failure"]
    assert bad["verdict"] == "WA" and ff["test"] == "public/test_basic.py::test_eviction_order"
    assert (ff["label"], ff["expected"], ff["got"]) == ("keys after putting c", ["a", "c"],
                                                        ["b", "c"])


def test_each_run_sees_the_new_code(expected):
    """Modules of an earlier run are forgotten: the second run must not test the first code."""
    starter = (FIX / "starter/lru.py").read_text()
    accepted = (FIX / "submissions/accepted/lru_plain_dict.py").read_text()
    got = [r["verdict"] for r in runs([starter, accepted, starter], expected)]
    assert got == ["RE", "AC", "RE"]


def test_without_expectations_the_tests_own_assertions_decide():
    ref = run((FIXTURES / "reference/toy_lru.py").read_text())
    assert ref["verdict"] == "AC"
    torch_only = "public/test_torch_only.py::test_tensor_values"  # no torch in the page
    assert {t["name"]: t["verdict"] for t in ref["tests"]}[torch_only] == "SKIP"
    assert ref["observations"] == {n: [] if n == torch_only else e["observations"]
                                   for n, e in public_expectations(PROBLEM).items()}


def test_a_test_the_browser_cannot_run_is_skipped_not_failed(expected):
    ok = run((FIX / "submissions/accepted/lru_plain_dict.py").read_text(), expected)
    skipped = [t for t in ok["tests"] if t["verdict"] == "SKIP"]
    assert [t["name"] for t in skipped] == ["public/test_torch_only.py::test_tensor_values"]
    assert "torch" in skipped[0]["failure"]["message"] and ok["verdict"] == "AC"


def test_compile_error_and_browser_missing_modules(expected):
    ce, missing = runs(["class LRUStore(:\n", "import torch\n"], expected)
    assert ce["verdict"] == "CE" and ce["compile_error"]["line"] == 1
    assert ce["compile_error"]["message"].endswith("(line 1)")
    assert "lru.py" in ce["compile_error"]["traceback"]
    assert "/" not in ce["compile_error"]["traceback"]  # no folder of the page's
    assert all(t["verdict"] == "NR" for t in ce["tests"]) and len(ce["tests"]) == len(expected)
    assert missing["verdict"] == "unsupported" and "Submit" in missing["unsupported"]


def test_observation_comparison_rules():
    """The page compares with the server's own rules (judge/judging/compare.py, runner/events.py)."""
    assert first_difference(1.0, 1.0 + 1e-9) is None and first_difference(1.0, 1.1) == ""
    assert first_difference(True, 1) == "" and first_difference(1, True) == ""
    assert first_difference(to_json_data((1, [2, (3,)])), [1, [2, [3]]]) is None
    with pytest.raises(ObservationError, match="JSON data"):
        to_json_data({1, 2})
    with pytest.raises(ObservationError, match="keys must be str"):
        to_json_data({1: "x"})
    exp = [{"label": "a", "value": 1}, {"label": "b", "value": 2}]
    assert compare(exp, exp[:1], partial=True) is None
    assert compare(exp, exp[:1]).label == "b"
    assert compare(exp, [exp[0], {"label": "c", "value": 2}]).label == "b"
    assert compare(exp, exp + [{"label": "c", "value": 3}]).got == 3


# ---------------------------------------------------------------- Run and Submit agree on CE
#
# The page's Python (Pyodide 3.14) is newer than the grading one (3.11 here): Run must report
# the CE that Submit will, on the same line, in the same words where the parsers agree.

ACCEPTED = (FIX / "submissions/accepted/lru_plain_dict.py").read_text()
GENERIC = "\n\ndef first[T](items: list[T]) -> T:\n    return items[0]\n"  # PEP 695, 3.12+
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"


def page_run(source: str, tmp_path, python=None) -> dict:
    return run(source, None, python)


def server_grade(source: str, tmp_path) -> dict:
    from judge import grade, load_problem
    from judge.grading.reference_cache import ReferenceCache
    return grade(load_problem(FIX), source, cache=ReferenceCache(tmp_path / "refcache")).to_dict()


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python accepts PEP 695 syntax")
def test_newer_syntax_is_the_same_compile_error_on_run_and_submit(tmp_path):
    from judge.grading.environment import grading_python
    source = ACCEPTED.rstrip("\n") + GENERIC
    line = source.splitlines().index("def first[T](items: list[T]) -> T:") + 1
    page = page_run(source, tmp_path, python=grading_python())
    server = server_grade(source, tmp_path)
    assert page["verdict"] == server["verdict"] == "CE"
    assert page["compile_error"]["line"] == server["compile_error"]["line"] == line
    assert page["compile_error"]["message"].endswith(f"(line {line})")
    assert f'File "lru.py", line {line}' in server["compile_error"]["traceback"]
    # Same interpreter, same parser: the two reports say exactly the same thing.
    assert page["compile_error"] == server["compile_error"]


def test_a_file_that_fails_to_import_is_described_as_the_server_does(tmp_path):
    source = ACCEPTED.rstrip("\n") + "\n\nraise ValueError('not configured')\n"
    page = page_run(source, tmp_path, python=HERE)
    server = server_grade(source, tmp_path)
    assert page["verdict"] == server["verdict"] == "CE", server
    assert page["compile_error"]["line"] == len(source.splitlines())
    assert page["compile_error"] == server["compile_error"]


def test_the_grading_grammar_is_checked_when_the_page_is_newer(tmp_path):
    """Here the page's Python plays the newer one: grading on an older grammar than its own, it
    must still report CE, with the line and a hint that only Submit's Python rejects it."""
    older = f"3.{sys.version_info[1] - 1}"
    source = ACCEPTED.rstrip("\n") + "\n\ntry:\n    pass\nexcept* ValueError:\n    pass\n"
    line = source.splitlines().index("except* ValueError:") + 1
    assert page_run(source, tmp_path)["verdict"] == "AC"  # no grading Python named
    res = page_run(source, tmp_path, python=older)
    ce = res["compile_error"]
    assert res["verdict"] == "CE" and ce["line"] == line and ce["exc_type"] == "SyntaxError"
    assert ce["message"].endswith(f"(line {line})")
    assert f"Python {older}" in ce["hint"] and f"Python {HERE}" in ce["hint"]
    # The first error wins, as in the grading parser; one every version rejects gets no hint.
    later = page_run(source + "class Broken(:\n", tmp_path, python=older)["compile_error"]
    assert later["line"] == line and later["hint"]
    plain = page_run("class Broken(:\n" + source, tmp_path, python=older)
    assert plain["verdict"] == "CE" and plain["compile_error"]["line"] == 1
    assert "hint" not in plain["compile_error"]
    # The grading Python's own version: nothing to check beyond compile().
    assert first_syntax_error(source, "lru.py", HERE) == (None, False)


def _newer_python() -> str | None:
    """A CPython >= 3.12 to stand in for Pyodide: $KVP_NEWER_PYTHON, PATH, or pyenv's versions
    (whose shims refuse versions that are not selected)."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates = [os.environ.get("KVP_NEWER_PYTHON")]
    candidates += [shutil.which(n) for n in ("python3.14", "python3.13", "python3.12")]
    candidates += [str(p) for p in sorted(pyenv.glob("3.1[2-9]*/bin/python3"), reverse=True)]
    for path in candidates:
        if not path:
            continue
        try:
            out = subprocess.run([path, "-c", "import sys; print(sys.version_info >= (3, 12))"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.stdout.strip() == "True":
            return path
    return None


FSTRINGS = {  # 3.12+ f-strings (PEP 701) that ast.parse(feature_version=(3, 11)) lets through
    "same quote": 'd = {"a": 1}\ns = f"{d["a"]}"\n',
    "backslash": "xs = []\ns = f\"{'\\n'.join(xs)}\"\n",
    "comment, triple-quoted": 'x = 1\ns = f"""\n{x  # why\n}\n"""\n',
    "field over two lines": 's = f"{1 +\n 2}"\n',
    "nested same quote": 'x = 1\ns = f"{f"{x}"}"\n',
    "after PEP 695": "type A = int\nd = {}\ns = f\"{d[\"a\"]}\"\n",
    "fine: other quotes": "d = {'a': 1}\ns = f\"{d['a']!r:>{10}} {{x}}\"\n",
    "fine: triple around": 'd = {"a": 1}\ns = f"""{d["a"]}"""\n',
    "fine: backslash in the literal": 'x = 1\ns = f"\\t{x}\\n"\n',
}


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="needs a 3.11 parser as the truth")
def test_newer_fstrings_are_judged_by_the_grading_grammar(tmp_path):
    """The page runner on a newer CPython (as in Pyodide) finds the line 3.11 rejects, or none."""
    newer = _newer_python()
    if newer is None:
        pytest.skip("no Python >= 3.12 on PATH")
    script = tmp_path / "probe.py"
    script.write_text(
        "import json, sys\nsys.path.insert(0, sys.argv[1])\nfrom judge.judging import syntax\n"
        "cases = json.loads(sys.stdin.read())\nout = {}\n"
        "for k, src in cases.items():\n"
        "    e, only = syntax.first_syntax_error(src, 'lru.py', '3.11')\n"
        "    out[k] = None if e is None else [e.lineno, only]\n"
        "print(json.dumps(out))\n")
    proc = subprocess.run([newer, str(script), str(default_root() / "page")],
                          input=json.dumps(FSTRINGS), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    for name, src in FSTRINGS.items():
        try:
            compile(src, "lru.py", "exec", dont_inherit=True)
            want = None
        except SyntaxError as e:
            want = e.lineno
        assert (got[name] and got[name][0]) == want, (name, got[name], want)
        assert got[name] is None or got[name][1], name  # the newer Python accepts all of them


def test_the_problem_api_names_the_grading_python(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from web.app import create_app
    from web.settings import Settings

    from e2e.fake_grader import quick

    settings = Settings(data_dir=tmp_path / "data", problems_dir=PROBLEMS,
                        reference_dir=FIXTURES / "reference")
    with TestClient(create_app(settings, grader=quick, workers=1)) as client:
        assert client.get("/api/problems/901").json()["grading_python"] == HERE
        monkeypatch.setenv("JUDGE_GRADING_PYTHON", "3.10")  # remote workers on another Python
        assert client.get("/api/problems/901").json()["grading_python"] == "3.10"
        assert "(Python 3.10)" in client.get("/problems/901").text


def test_the_page_needs_only_the_files_it_lists():
    """Every run here imports the runner in a child whose sys.path holds only `page_files()`,
    pytest and the standard library (page_support.run_page also checks that no judge module
    came from elsewhere); the same list is what the front-end build bundles."""
    from judge.browser.page_run import page_files

    repo = Path(__file__).resolve().parents[2]
    files = page_files()
    assert all((repo / f).is_file() for f in files) and len(set(files)) == len(files)
    assert {"judge/browser/page_run.py", "judge/judging/syntax.py", "judge/runner/plugin.py"} <= set(files)
    runner = {f"judge/runner/{p.name}" for p in (repo / "judge/runner").glob("*.py")}
    assert runner <= set(files)  # tests import any of them as judge_runner.*
    # the bundle is the list itself: build_frontend.sh writes it, build.mjs reads it
    assert "page_files()" in (repo / "scripts/build_frontend.sh").read_text()
    assert "web/frontend/page-files.json" in (repo / "web/frontend/build.mjs").read_text()
    assert run(ACCEPTED, None, HERE)["verdict"] == "AC"
