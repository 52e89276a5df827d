"""The in-sandbox runner on its own (run unsandboxed here): the JSON lines it writes, the
`observe` and `device` fixtures, how it classifies failures, its timeouts, and that pytest
picks up nothing from outside the test folder."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).resolve().parents[2] / "judge" / "runner"


def run_runner(tmp_path, source, tests, *, limit=5.0, extra_env=None, outside=None):
    lib, sub, suite, scratch = (tmp_path / d for d in ("lib", "sub", "outer/suite", "scratch"))
    for d in (lib, sub, suite, scratch):
        d.mkdir(parents=True)
    shutil.copytree(RUNNER, lib / "judge_runner", ignore=shutil.ignore_patterns("__pycache__"))
    (sub / "mod.py").write_text(source)
    (suite / "test_it.py").write_text(tests)
    for name, text in (outside or {}).items():  # files next to the suite dir, to be ignored
        (suite.parent / name).write_text(text)
    env = {"PYTHONPATH": f"{sub}:{lib}", "PATH": "/usr/bin:/bin", "JUDGE_DEVICE": "cpu",
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1",
           **(extra_env or {})}
    proc = subprocess.run(
        [sys.executable, "-P", "-s", "-m", "judge_runner", "--results", "out.jsonl",
         "--module", "mod", "--submission", str(sub / "mod.py"), "--suite-dir", str(suite),
         "--default-limit", str(limit), "--import-limit", str(limit), "test_it.py"],
        cwd=scratch, env=env, capture_output=True, timeout=60)
    lines = [json.loads(x) for x in (scratch / "out.jsonl").read_text().splitlines()]
    return proc, lines


def finished(lines):
    return {e["test"]: e for e in lines if e["ev"] == "test_finished"}


def observations(lines, test):
    return [(e["label"], e["value"]) for e in lines if e["ev"] == "observation"
            and e["test"] == test]


SOURCE = """
def double(x):
    if x == 3:
        raise KeyError(x)
    return 2 * x
"""

TESTS = """
import pytest
from mod import double

def test_ok(observe, device):
    observe("double(1)", double(1))
    observe("a tuple", (1, 2.5, {"k": (None, True)}))
    observe("device", device)

def test_assert(observe):
    observe("double(2)", double(2))
    assert double(2) == 5, "double(2) should be 5"

def test_student_error(observe):
    observe("double(3)", double(3))

def test_not_json(observe):
    observe("a set", {1, 2})

def test_test_error(observe):
    observe("x", 1)
    len(None)

def test_skip(observe):
    pytest.skip("no")
"""


def test_runner_writes_observations_and_classifies_failures(tmp_path):
    proc, lines = run_runner(tmp_path, SOURCE, TESTS)
    assert proc.returncode == 0, proc.stderr
    kinds = [e["ev"] for e in lines]
    assert kinds[:3] == ["start", "imported", "collected"] and kinds[-1] == "finished"
    fin = finished(lines)
    assert fin["test_it.py::test_ok"]["outcome"] == "passed"
    assert observations(lines, "test_it.py::test_ok") == [
        ("double(1)", 2), ("a tuple", [1, 2.5, {"k": [None, True]}]), ("device", "cpu")]
    a = fin["test_it.py::test_assert"]
    assert (a["outcome"], a["kind"], a["where"]) == ("failed", "assertion", "test_it.py:12")
    assert "double(2) should be 5" in a["message"]
    s = fin["test_it.py::test_student_error"]
    assert (s["kind"], s["exc_type"], s["line"]) == ("student", "KeyError", 4)
    assert 'File "mod.py", line 4, in double' in s["traceback"]
    assert "test_it.py" not in s["traceback"] and "_pytest" not in s["traceback"]
    n = fin["test_it.py::test_not_json"]
    assert (n["kind"], n["exc_type"]) == ("observe", "ObservationError")
    assert "set" in n["message"] and "sorted" in n["message"]
    assert fin["test_it.py::test_test_error"]["kind"] == "test"
    assert fin["test_it.py::test_skip"]["outcome"] == "skipped"


def test_runner_reports_compile_errors_with_the_line(tmp_path):
    proc, lines = run_runner(tmp_path, "x = 1\ndef f(:\n    pass\n", TESTS)
    ce = [e for e in lines if e["ev"] == "compile_error"][0]
    assert proc.returncode == 3
    assert ce["exc_type"] == "SyntaxError" and ce["line"] == 2
    proc, lines = run_runner(tmp_path / "b", "import os\nimport not_a_module_xyz\n", TESTS)
    ce = [e for e in lines if e["ev"] == "compile_error"][0]
    assert ce["exc_type"] == "ModuleNotFoundError" and ce["line"] == 2
    assert not any(e["ev"] == "test_started" for e in lines)


def test_runner_times_out_a_test_and_moves_on(tmp_path):
    # the runner's limits are CPU time: a spinning test is stopped, a sleeping one is left to
    # the parent's wall-clock net (tests/grading/test_cpu_time_limits.py)
    tests = ("def test_slow(observe):\n    while True:\n        pass\n"
             "def test_next(observe):\n    observe('x', 1)\n")
    proc, lines = run_runner(tmp_path, "", tests, limit=0.5)
    fin = finished(lines)
    assert fin["test_it.py::test_slow"]["outcome"] == "timeout"
    # ITIMER_PROF is sampled at the scheduler's ticks, process_time is exact: on a busy host the
    # timer fires up to a few ticks before process_time reaches the limit
    assert fin["test_it.py::test_slow"]["cpu_s"] >= 0.5 - 0.05
    assert fin["test_it.py::test_next"]["outcome"] == "passed"


def test_runner_ends_a_test_that_swallows_its_timeout(tmp_path):
    tests = ("def test_stubborn(observe):\n"
             "    try:\n        while True:\n            pass\n"
             "    except BaseException:\n        pass\n"
             "    while True:\n        pass\n"
             "def test_next(observe):\n    observe('x', 1)\n")
    proc, lines = run_runner(tmp_path, "", tests, limit=0.5)
    assert proc.returncode == 124
    fin = finished(lines)
    assert fin["test_it.py::test_stubborn"]["outcome"] == "timeout"
    assert "test_it.py::test_next" not in fin


def test_runner_ignores_conftest_and_ini_outside_the_suite(tmp_path):
    outside = {"conftest.py": "raise RuntimeError('outside conftest was imported')\n",
               "pytest.ini": "[pytest]\naddopts = --this-option-does-not-exist\n",
               "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-x --nope'\n"}
    proc, lines = run_runner(tmp_path, SOURCE, "def test_a(observe):\n    observe('a', 1)\n",
                             outside=outside)
    assert proc.returncode == 0, proc.stderr
    assert finished(lines)["test_it.py::test_a"]["outcome"] == "passed"


def test_runner_reads_the_device_from_the_environment(tmp_path):
    tests = "def test_d(observe, device):\n    observe('device', device)\n"
    _, lines = run_runner(tmp_path, "", tests, extra_env={"JUDGE_DEVICE": "cuda"})
    assert observations(lines, "test_it.py::test_d") == [("device", "cuda")]


@pytest.mark.parametrize("value", [float("nan"), 10 ** 30, "ü", [], {}])
def test_observe_accepts_json_data(value):
    from judge.runner.events import to_json_data

    out = to_json_data(value)
    assert out == value or (out != out and value != value)


def test_observe_rejects_non_str_keys_and_objects():
    from judge.runner.events import ObservationError, to_json_data

    with pytest.raises(ObservationError, match="key"):
        to_json_data({1: 2})
    with pytest.raises(ObservationError, match="object"):
        to_json_data([object()])


def test_builtin_fixtures_work_in_the_runner(tmp_path):
    tests = ("def test_fixtures(observe, tmp_path, capsys, monkeypatch):\n"
             "    (tmp_path / 'f').write_text('x')\n"
             "    print('hello')\n"
             "    observe('captured', capsys.readouterr().out)\n"
             "    monkeypatch.setenv('A', 'b')\n")
    proc, lines = run_runner(tmp_path, "", tests, extra_env={"TMPDIR": str(tmp_path)})
    assert finished(lines)["test_it.py::test_fixtures"]["outcome"] == "passed", lines
    assert observations(lines, "test_it.py::test_fixtures") == [("captured", "hello\n")]
