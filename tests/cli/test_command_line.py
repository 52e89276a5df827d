"""The two front ends on the terminal: `judge` (python -m judge) and practice/judge.py. Exit
codes, --json output, the student's verbs."""

import json
import subprocess
import sys
from pathlib import Path

from paths import REPO

FIXTURES = REPO / "tests" / "fixtures"
LRU = FIXTURES / "problems" / "001-lru-cache"
REFERENCE = FIXTURES / "reference" / "lru.py"
FIFO = LRU / "submissions" / "wrong_answer" / "fifo.py"


# `env` (the environment the commands run in, one per module) is tests/cli/conftest.py's


def judge(env, *args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "judge", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def practice(env, *args, cwd="/"):
    return subprocess.run([sys.executable, str(REPO / "practice" / "judge.py"), *map(str, args)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_grade_exit_codes_and_json(env):
    ok = judge(env, "grade", LRU, REFERENCE, "--json")
    assert ok.returncode == 0, ok.stderr
    report = json.loads(ok.stdout)
    assert report["verdict"] == "AC" and report["schema_version"] == 1
    wa = judge(env, "grade", "lru-cache", FIFO)
    assert wa.returncode == 1
    assert "WA" in wa.stdout and "observation: gets" in wa.stdout
    assert "at [1]: expected null, got 2" in wa.stdout
    bad = judge(env, "grade", "no-such-problem", FIFO)
    assert bad.returncode == 2 and "no problem named" in bad.stderr


def test_grade_public_suite_only(env):
    out = judge(env, "grade", "1", REFERENCE, "--suite", "public", "--json")
    assert {t["suite"] for t in json.loads(out.stdout)["tests"]} == {"public"}


def test_list_and_doctor(env):
    out = judge(env, "list", "--json")
    assert out.returncode == 0
    assert [p["slug"] for p in json.loads(out.stdout)] == ["lru-cache"]
    out = judge(env, "list", "--lang", "zh")
    assert "LRU 缓存" in out.stdout
    out = judge(env, "doctor", "--json")
    info = json.loads(out.stdout)
    assert out.returncode == 0 and info["python"] and info["device"] in ("cpu", "cuda")
    assert "rlimits" in info["layers"]


def test_check_and_new(env, tmp_path):
    out = judge(env, "check", LRU)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "OK" in out.stdout and "wrong_answer/fifo.py" in out.stdout
    out = judge(env, "new", "5", "tiny-sum", "--root", tmp_path / "problems")
    assert out.returncode == 0 and (tmp_path / "problems" / "005-tiny-sum").is_dir()
    out = judge(env, "check", tmp_path / "problems" / "005-tiny-sum")
    assert out.returncode == 1  # the reference is still a stub


def test_practice_list_start_test(env):
    out = practice(env, "list")
    assert out.returncode == 0 and "001-lru-cache" in out.stdout and "not started" in out.stdout
    out = practice(env, "start", "1")
    assert out.returncode == 0 and "# An LRU cache" in out.stdout
    work = Path(env["KVPRACTICE_WORKSPACE"]) / "001-lru-cache.py"
    assert work.read_text() == (LRU / "starter" / "lru.py").read_text()
    out = practice(env, "test", "1", "--lang", "zh")
    assert out.returncode == 1 and "运行错误" in out.stdout
    out = practice(env, "list")
    assert "last: RE 0%" in out.stdout
    work.write_text(REFERENCE.read_text())
    out = practice(env, "1", "--json")  # `judge.py 143` = `judge.py test 143`
    assert out.returncode == 0 and json.loads(out.stdout)["verdict"] == "AC"
    out = practice(env, "test", "1", "--run", "--json")
    names = [t["name"] for t in json.loads(out.stdout)["tests"]]
    assert names == ["public/test_basic.py::test_example_put_get"]
    out = practice(env, "test", "1", str(FIFO), "--public")
    assert out.returncode == 1 and "hidden/" not in out.stdout


def test_practice_solution_and_missing_file(env):
    out = practice(env, "solution", "1")
    assert out.returncode == 0 and "not shown" in out.stdout
    out = practice(env, "test", "1", "/nonexistent/file.py")
    assert out.returncode == 2
