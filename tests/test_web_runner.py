"""The page's runner (web/pyrunner/kvp_runner.py) in CPython: the same file runs in Pyodide."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.fake_grader import FIXTURES, PROBLEMS
from web.pyrunner import kvp_runner as r

FIX = PROBLEMS / "901-toy-lru"
TESTS = {f"public/{p.name}": p.read_text() for p in (FIX / "tests/public").glob("*.py")}
HANDBOOK = {"toy_store": (FIXTURES / "reference/toy_store.py").read_text()}


def run(source: str, expected=None, tmp_path=None) -> dict:
    return r.run({"workdir": str(tmp_path / "w"), "module": "lru", "source": source,
                  "tests": TESTS, "handbook": HANDBOOK, "expected": expected})


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    res = run((FIXTURES / "reference/toy_lru.py").read_text(),
              tmp_path=tmp_path_factory.mktemp("ref"))
    assert res["verdict"] == "AC"
    return res["observations"]


def test_accepted_and_wrong(expected, tmp_path):
    ok = run((FIX / "submissions/accepted/lru_plain_dict.py").read_text(), expected, tmp_path)
    assert ok["verdict"] == "AC" and ok["score"] == 1.0
    bad = run((FIX / "submissions/wrong_answer/get_does_not_refresh.py").read_text(), expected,
              tmp_path)
    ff = bad["first_failure"]
    assert bad["verdict"] == "WA" and ff["test"] == "public/test_basic.py::test_eviction_order"
    assert (ff["label"], ff["expected"], ff["got"]) == ("keys after putting c", ["a", "c"],
                                                        ["b", "c"])


def test_each_run_sees_the_new_code(expected, tmp_path):
    """Modules of an earlier run are purged: the second run must not test the first code."""
    starter = (FIX / "starter/lru.py").read_text()
    assert run(starter, expected, tmp_path)["verdict"] == "RE"
    assert run((FIX / "submissions/accepted/lru_plain_dict.py").read_text(), expected,
               tmp_path)["verdict"] == "AC"
    assert run(starter, expected, tmp_path)["verdict"] == "RE"


def test_compile_error_and_browser_missing_modules(expected, tmp_path, monkeypatch):
    ce = run("class LRUStore(:\n", expected, tmp_path)
    assert ce["verdict"] == "CE" and ce["compile_error"]["line"] == 1
    assert ce["compile_error"]["message"].endswith("(line 1)")
    assert "lru.py" in ce["compile_error"]["traceback"] and str(tmp_path) not in \
        ce["compile_error"]["traceback"]
    monkeypatch.setattr(r, "BROWSER_MISSING", r.BROWSER_MISSING | {"not_in_this_browser"})
    res = run("import not_in_this_browser\n", expected, tmp_path)
    assert res["verdict"] == "unsupported" and "Submit" in res["unsupported"]


def test_observation_comparison_rules():
    assert r.same_value(1.0, 1.0 + 1e-9) and not r.same_value(1.0, 1.1)
    assert not r.same_value(True, 1) and not r.same_value(1, True)
    assert r.same_value(r.to_json_data((1, [2, (3,)])), [1, [2, [3]]])
    with pytest.raises(TypeError, match="JSON data"):
        r.to_json_data({1, 2})
    with pytest.raises(TypeError, match="not a str"):
        r.to_json_data({1: "x"})
    exp = [["a", 1], ["b", 2]]
    assert r.first_divergence(exp, [["a", 1]], complete=False) is None
    assert r.first_divergence(exp, [["a", 1]], complete=True)["label"] == "b"
    assert r.first_divergence(exp, [["a", 1], ["c", 2]], complete=True)["label"] == "b"
    assert r.first_divergence(exp, exp + [["c", 3]], complete=True)["got"] == 3


# ---------------------------------------------------------------- Run and Submit agree on CE
#
# The page's Python (Pyodide 3.14) is newer than the grading one (3.11 here): Run must report
# the CE that Submit will, on the same line, in the same words where the parsers agree.

ACCEPTED = (FIX / "submissions/accepted/lru_plain_dict.py").read_text()
GENERIC = "\n\ndef first[T](items: list[T]) -> T:\n    return items[0]\n"  # PEP 695, 3.12+
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"


def page_run(source: str, tmp_path, python=None) -> dict:
    return r.run({"workdir": str(tmp_path / "w"), "module": "lru", "source": source,
                  "tests": TESTS, "handbook": HANDBOOK, "expected": None, "python": python})


def server_grade(source: str, tmp_path) -> dict:
    from judge import grade, load_problem
    from judge.reference_cache import ReferenceCache
    return grade(load_problem(FIX), source, cache=ReferenceCache(tmp_path / "refcache")).to_dict()


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python accepts PEP 695 syntax")
def test_newer_syntax_is_the_same_compile_error_on_run_and_submit(tmp_path):
    from judge.environment import grading_python
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
    assert r.first_syntax_error(source, "lru.py", HERE) == (None, False)


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
        "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport kvp_runner\n"
        "cases = json.loads(sys.stdin.read())\nout = {}\n"
        "for k, src in cases.items():\n"
        "    e, only = kvp_runner.first_syntax_error(src, 'lru.py', '3.11')\n"
        "    out[k] = None if e is None else [e.lineno, only]\n"
        "print(json.dumps(out))\n")
    proc = subprocess.run([newer, str(script), str(Path(r.__file__).parent)],
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

    from e2e.fake_grader import quick
    from web.app import create_app
    from web.settings import Settings

    settings = Settings(data_dir=tmp_path / "data", problems_dir=PROBLEMS,
                        reference_dir=FIXTURES / "reference")
    with TestClient(create_app(settings, grader=quick, workers=1)) as client:
        assert client.get("/api/problems/901").json()["grading_python"] == HERE
        monkeypatch.setenv("JUDGE_GRADING_PYTHON", "3.10")  # remote workers on another Python
        assert client.get("/api/problems/901").json()["grading_python"] == "3.10"
        assert "(Python 3.10)" in client.get("/problems/901").text
