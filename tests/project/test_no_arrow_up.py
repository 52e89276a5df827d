"""The grading core never depends on the web platform: `judge/` imports nothing from `web/`,
the `judge` console script lives in web/ and hands the core's verbs to judge.cli.main, and
practice/judge.py finds the `judge` package whatever PYTHONPATH says."""

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from paths import REPO

from judge.judging import python_ast

FIXTURES = REPO / "tests" / "fixtures"


def _imported_modules(path: Path) -> set[str]:
    tree = python_ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module" \
                and node.args and isinstance(node.args[0], ast.Constant):
            names.add(str(node.args[0].value))
    return names


def test_judge_imports_nothing_from_web():
    found = {p.relative_to(REPO).as_posix(): sorted(m for m in _imported_modules(p)
                                                   if m == "web" or m.startswith("web."))
             for p in (REPO / "judge").rglob("*.py")}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_console_script_is_the_web_front_end():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["judge"] == "web.cli:judge_main"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    base = tmp_path_factory.mktemp("arrow")
    e = dict(os.environ, KVPRACTICE_CACHE=str(base / "cache"),
             KVPRACTICE_PROBLEMS=str(FIXTURES / "problems"),
             KVPRACTICE_WORKSPACE=str(base / "workspace"), LANG="C.UTF-8", NO_COLOR="1")
    e.pop("PYTHONPATH", None)
    return e


def run(env, *argv, cwd=REPO, **extra):
    return subprocess.run([sys.executable, *map(str, argv)], cwd=cwd, env=dict(env, **extra),
                          capture_output=True, text=True, timeout=120)


def test_the_judge_command_has_every_verb(env):
    helped = run(env, "-m", "web", "--help")
    assert helped.returncode == 0
    for verb in ("grade", "check", "new", "import", "list", "doctor",
                 "serve", "worker", "regrade", "parity"):
        assert verb in helped.stdout
    listed = run(env, "-m", "web", "list", "--json")
    assert listed.returncode == 0 and '"lru-cache"' in listed.stdout
    serve = run(env, "-m", "web", "serve", "--help")
    assert serve.returncode == 0 and "--workers" in serve.stdout


def test_the_core_alone_has_only_its_own_verbs(env):
    res = run(env, "-m", "judge", "serve")
    assert res.returncode == 2 and "invalid choice: 'serve'" in res.stderr
    assert run(env, "-m", "judge", "list").returncode == 0


@pytest.mark.parametrize("pythonpath,cwd", [
    (None, "/"), (str(REPO), "/"), (str(REPO / "practice"), "/"),
    (f"{REPO / 'practice'}{os.pathsep}{REPO}", str(REPO / "practice")),
])
def test_practice_judge_works_with_any_pythonpath(env, pythonpath, cwd):
    extra = {"PYTHONPATH": pythonpath} if pythonpath else {}
    res = run(env, REPO / "practice" / "judge.py", "list", cwd=cwd, **extra)
    assert res.returncode == 0, res.stderr
    assert "lru-cache" in res.stdout
