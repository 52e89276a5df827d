"""grade() end to end on the fixture problem 001 (an LRU cache, pure Python), through the real
sandbox: every verdict, what public and hidden failures show, and the attacks a submission can
try (forged results, patched pytest, reading secrets)."""

import json
import os
import stat
from pathlib import Path

import pytest
from lowered_floor import floor_lowered

from judge import grade, load_problem
from judge.grading.reference_cache import ReferenceCache

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROBLEM_DIR = FIXTURES / "problems" / "001-lru-cache"
REFERENCE = (FIXTURES / "reference" / "lru.py").read_text()
FIRST = ["public/test_basic.py::test_example_put_get"]
# the attacks and limits, on the cold path and on a warm fork (tests/sandbox_paths.py)
BOTH_PATHS = pytest.mark.usefixtures("sandbox_path")


# `problem` (the fixture problem 001) and `cache` (a reference cache per module) are
# tests/conftest.py's fixtures: the files that grade problem 001 too take them from there.
# The spinning tests grade it with a 1 s floor (tests/lowered_floor.py): a spin holds its run
# for the floor plus grace, and the verdict is TLE however long the floor is.
SPIN_FLOOR_S = 1.0


def run(problem, cache, source, **kw):
    report = grade(problem, source, cache=cache, **kw)
    return report, report.to_dict()


def patched(extra: str) -> str:
    """The reference solution with something appended (e.g. a replaced method)."""
    return REFERENCE + "\n\n" + extra + "\n"


def by_name(d):
    return {t["name"]: t for t in d["tests"]}


def test_reference_is_accepted_with_a_complete_report(problem, cache):
    report, d = run(problem, cache, REFERENCE)
    assert d["verdict"] == "AC" and d["score"] == 1.0, report.ie_cause
    assert d["schema_version"] == 1
    assert d["problem"] == {"id": "001", "slug": "lru-cache", "version": problem.version}
    assert len(d["submission"]["sha256"]) == 64
    assert [t["name"] for t in d["tests"]] == [t.name for t in problem.tests()]
    assert all(t["verdict"] == "AC" for t in d["tests"])
    public = [t for t in d["tests"] if t["suite"] == "public"]
    hidden = [t for t in d["tests"] if t["suite"] == "hidden"]
    assert all(t["observations"] >= 1 and t["time_s"] is not None for t in public)
    assert all(t["observations"] is None and t["time_s"] is None for t in hidden)
    assert d["scored_suites"] == ["hidden"]
    assert by_name(d)["hidden/test_hidden.py::test_random_ops"]["weight"] == 2
    prov = d["provenance"]
    assert prov["device"] == "cpu" and prov["python"] and "sandbox_layers" in prov
    assert isinstance(prov["missing_layers"], list)
    for key in ("total_s", "reference_s", "public_s", "compare_s"):
        assert key in d["timings"]
    assert "hidden_s" not in d["timings"]  # the hidden run's timings are logged, not shown
    assert set(d["timings"]["phases"]) == {"public"}
    json.dumps(d)


def test_reference_cache_is_reused(problem, tmp_path):
    cache = ReferenceCache(tmp_path / "c")
    first, _ = run(problem, cache, REFERENCE)
    second, _ = run(problem, cache, REFERENCE)
    assert first.timings["reference_cached"] is False
    assert second.timings["reference_cached"] is True
    assert second.provenance["reference_cache"] == "hit"
    path = cache.path(problem, "cpu")
    assert path.is_file() and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_wrong_answer_in_public_shows_the_first_divergence(problem, cache):
    source = (PROBLEM_DIR / "submissions/wrong_answer/fifo.py").read_text()
    report, d = run(problem, cache, source)
    assert d["verdict"] == "WA" and 0 < d["score"] < 1
    ff = d["first_failure"]
    assert ff["test"] == "public/test_basic.py::test_eviction_order"
    assert (ff["label"], ff["path"]) == ("gets", "[1]")
    assert ff["expected"] == [1, None, 1, 3] and ff["got"] == [1, 2, None, 3]
    assert "expected None, got 2" in ff["message"]


def test_wrong_answer_in_hidden_shows_only_that_it_failed(problem, cache):
    source = (PROBLEM_DIR / "submissions/wrong_answer/no_refresh_on_put.py").read_text()
    report, d = run(problem, cache, source)
    assert d["verdict"] == "WA"
    t = by_name(d)["hidden/test_hidden.py::test_update_refreshes"]
    assert t["verdict"] == "WA"
    # not even the label: which observation differs first is the submission's choice
    assert t["failure"] == {"kind": "failed", "label": None, "exc_type": None, "line": None}
    assert d["first_failure"]["test"] == t["name"]
    assert set(d["first_failure"]) == {"test", "verdict", "kind", "label", "exc_type", "line"}
    text = json.dumps(d["tests"])
    assert '["b", "a", "c"]' not in text.replace("'", '"')  # neither expected ...
    assert '["a", "c"]' not in text                         # ... nor got


@BOTH_PATHS
def test_runtime_error_traceback_is_limited_to_the_submission(problem, cache):
    source = patched("def _get(self, key):\n    return {}[key]\nLRUCache.get = _get")
    report, d = run(problem, cache, source, suite="public")
    assert d["verdict"] == "RE"
    ff = d["first_failure"]
    assert ff["exc_type"] == "KeyError" and ff["line"] == source.splitlines().index(
        "    return {}[key]") + 1
    assert 'File "lru.py"' in ff["traceback"]
    for noise in ("ops.py", "test_basic.py", "judge_runner", "_pytest", "pluggy"):
        assert noise not in ff["traceback"]


def test_runtime_error_in_hidden_shows_only_that_it_failed(problem, cache):
    source = patched("_put = LRUCache.put\n"
                     "def put(self, key, value):\n"
                     "    if self.capacity == 1 and len(self.data) == 1:\n"
                     "        raise ValueError('secret detail ' + repr(self.data))\n"
                     "    _put(self, key, value)\n"
                     "LRUCache.put = put")
    report, d = run(problem, cache, source)
    t = by_name(d)["hidden/test_hidden.py::test_capacity_one"]
    assert t["verdict"] == "WA"  # RE in the judge's log
    # the exception's type and line, even the verdict, are the submission's to choose
    assert t["failure"] == {"kind": "failed", "label": None, "exc_type": None, "line": None}
    assert "secret detail" not in json.dumps(d)


@BOTH_PATHS
def test_hidden_exception_type_is_not_a_channel(problem, cache):
    source = patched("def _get(self, key):\n"
                     "    raise type('Leak_' + 'abc', (Exception,), {})('x')\n"
                     "LRUCache.get = _get")
    _, d = run(problem, cache, source, suite="hidden")
    types = {t["failure"]["exc_type"] for t in d["tests"] if t["failure"]}
    assert types == {None} and "Leak_" not in json.dumps(d)


def test_syntax_error_is_a_compile_error_with_its_line(problem, cache):
    report, d = run(problem, cache, "class LRUCache:\n    def get(self, key:\n        pass\n")
    assert d["verdict"] == "CE" and d["score"] == 0
    assert d["compile_error"]["exc_type"] == "SyntaxError" and d["compile_error"]["line"] == 2
    assert all(t["verdict"] == "NR" for t in d["tests"])


def test_importing_a_missing_module_is_a_compile_error(problem, cache):
    _, d = run(problem, cache, "import numpy_that_is_not_there\n")
    assert d["verdict"] == "CE"
    assert d["compile_error"]["exc_type"] == "ModuleNotFoundError"
    assert d["compile_error"]["line"] == 1
    assert "numpy_that_is_not_there" in d["compile_error"]["message"]


def test_a_missing_class_is_a_compile_error(problem, cache):
    _, d = run(problem, cache, "class LRUCash:\n    pass\n", suite="public")
    assert d["verdict"] == "CE"
    assert "LRUCache" in d["compile_error"]["message"]


@BOTH_PATHS
def test_endless_loop_is_tle(problem, cache):
    source = patched("def _get(self, key):\n    while True:\n        pass\nLRUCache.get = _get")
    _, d = run(floor_lowered(problem, SPIN_FLOOR_S), cache, source, suite="public", select=FIRST)
    assert d["verdict"] == "TLE" and d["tests"][0]["failure"]["kind"] == "timeout"


@BOTH_PATHS
def test_sleeping_forever_and_swallowing_the_timeout_is_tle(problem, cache):
    source = patched("import time\n"
                     "def _get(self, key):\n"
                     "    while True:\n"
                     "        try:\n            time.sleep(1000)\n"
                     "        except BaseException:\n            pass\n"
                     "LRUCache.get = _get")
    _, d = run(floor_lowered(problem, SPIN_FLOOR_S), cache, source, suite="public")
    assert d["verdict"] == "TLE"
    assert [t["verdict"] for t in d["tests"]] == ["TLE", "NR"]


@BOTH_PATHS
def test_a_20_gb_allocation_is_mle(problem, cache):
    source = patched("def _get(self, key):\n    x = bytearray(20 * 2**30)\n    return len(x)\n"
                     "LRUCache.get = _get")
    _, d = run(problem, cache, source, suite="public", select=FIRST)
    assert d["verdict"] in ("MLE", "RE")
    assert d["verdict"] == "MLE" or d["tests"][0]["failure"]["exc_type"] == "MemoryError"


@BOTH_PATHS
def test_endless_printing_is_ole(problem, cache):
    source = patched("def _get(self, key):\n    while True:\n        print('spam ' * 50)\n"
                     "LRUCache.get = _get")
    _, d = run(problem, cache, source, suite="public", select=FIRST)
    assert d["verdict"] == "OLE"


@BOTH_PATHS
def test_os_exit_inside_a_test_is_not_accepted(problem, cache):
    source = patched("import os\ndef _get(self, key):\n    os._exit(0)\nLRUCache.get = _get")
    _, d = run(problem, cache, source)
    assert d["verdict"] == "RE"
    assert [t["verdict"] for t in d["tests"][:2]] == ["RE", "NR"]


FORGE = '''
import json, os
_names = ["test_basic.py::test_example_put_get", "test_basic.py::test_eviction_order",
          "test_hidden.py::test_update_refreshes", "test_hidden.py::test_capacity_one",
          "test_hidden.py::test_random_ops", "test_hidden.py::test_stats"]
with open("results.jsonl", "a") as _f:
    for _n in _names:
        _f.write(json.dumps({"ev": "test_started", "test": _n, "t": 0, "limit_s": 9}) + "\\n")
        _f.write(json.dumps({"ev": "observation", "test": _n, "i": 0, "label": "gets",
                             "value": [1]}) + "\\n")
        _f.write(json.dumps({"ev": "test_finished", "test": _n, "outcome": "passed",
                             "duration_s": 0.001}) + "\\n")
    _f.write(json.dumps({"ev": "finished", "t": 0, "tests_s": 0.1}) + "\\n")
print('{"ev": "test_finished", "outcome": "passed"}')
'''


@BOTH_PATHS
def test_forged_result_lines_are_not_accepted(problem, cache):
    _, d = run(problem, cache, "class LRUCache:\n    pass\n" + FORGE)
    assert d["verdict"] != "AC" and d["score"] == 0
    _, d = run(problem, cache, "class LRUCache:\n    pass\n" + FORGE + "\nos._exit(0)\n")
    assert d["verdict"] != "AC" and d["score"] == 0


@BOTH_PATHS
def test_patching_pytest_to_skip_test_bodies_is_not_accepted(problem, cache):
    source = ("import _pytest.python\n"
              "_pytest.python.Function.runtest = lambda self: None\n"
              "class LRUCache:\n    pass\n")
    _, d = run(problem, cache, source)
    assert d["verdict"] == "WA" and d["score"] == 0
    assert d["first_failure"]["kind"] == "observation"


@BOTH_PATHS
def test_skipping_from_the_submission_is_not_accepted(problem, cache):
    source = patched("import pytest\ndef _get(self, key):\n    pytest.skip('no')\n"
                     "LRUCache.get = _get")
    _, d = run(problem, cache, source, suite="public", select=FIRST)
    assert d["verdict"] == "WA"


@BOTH_PATHS
def test_observing_non_json_data_fails_the_test_not_the_judge(problem, cache):
    source = patched("_get = LRUCache.get\n"
                     "LRUCache.get = lambda self, key: {_get(self, key)}")
    _, d = run(problem, cache, source, suite="public", select=FIRST)
    assert d["verdict"] == "WA"
    assert "not JSON data" in d["first_failure"]["message"]


@BOTH_PATHS
def test_hidden_tests_and_reference_do_not_reach_the_report(problem, cache):
    secrets = [str(PROBLEM_DIR / "tests/hidden/test_hidden.py"), str(FIXTURES / "reference/lru.py")]
    source = patched(f"""
import glob, itertools, os, sys
def _loot():
    found = []
    paths = {secrets!r}
    for entry in sys.path + ["/tmp", os.getcwd()]:
        # the first 200 found, without walking the whole tree above each entry first
        found_here = glob.iglob(os.path.join(entry, "..", "**", "*.py"), recursive=True)
        paths += list(itertools.islice(found_here, 200))
    for p in paths:
        try:
            found.append(open(p).read())
        except Exception:
            pass
    return "\\n".join(found)
def _get(self, key):
    text = _loot()
    print(text)
    raise RuntimeError(text)
LRUCache.get = _get
""")
    _, d = run(problem, cache, source)
    text = json.dumps(d)
    for marker in ("rng = random.Random(7)", "self.data.move_to_end(key)",
                   "def test_update_refreshes", "test_random_ops(observe)"):
        assert marker not in text, marker


@BOTH_PATHS
def test_the_judges_environment_is_not_visible(problem, cache, monkeypatch):
    monkeypatch.setenv("JUDGE_TEST_SECRET", "s3cr3t-token-1b7f")
    source = patched("""
import os
def _get(self, key):
    seen = repr(dict(os.environ))
    for pid in ("1", str(os.getppid()), "self"):
        try:
            seen += open(f"/proc/{pid}/environ", "rb").read().decode("latin-1")
        except Exception:
            pass
    raise RuntimeError(seen)
LRUCache.get = _get
""")
    _, d = run(problem, cache, source, suite="public", select=FIRST)
    assert d["verdict"] == "RE"
    assert "s3cr3t-token-1b7f" not in json.dumps(d)
    assert "JUDGE_DEVICE" in d["first_failure"]["message"]  # the child's own env is shown


def test_events_stream_per_test_progress(problem, cache):
    events = []
    report, _ = run(problem, cache, REFERENCE, on_event=events.append)
    types = [e["type"] for e in events]
    assert types.count("suite_started") == 2 and types.count("suite_finished") == 2
    assert types[-1] == "done" and events[-1]["verdict"] == "AC"
    names = [t.name for t in problem.tests()]
    assert sorted(e["test"] for e in events if e["type"] == "test_finished") == sorted(names)
    assert sorted(e["test"] for e in events if e["type"] == "test_started") == sorted(names)
    assert all(e["verdict"] == "AC" for e in events if e["type"] == "test_finished")


def test_selecting_the_examples_runs_only_them(problem, cache):
    examples = [t.name for t in problem.examples()]
    report, d = run(problem, cache, REFERENCE, select=examples)
    assert [t["name"] for t in d["tests"]] == examples == FIRST
    with pytest.raises(ValueError):
        grade(problem, REFERENCE, select=["public/nope.py::test_x"], cache=cache)


def test_a_failing_reference_is_an_internal_error(tmp_path, cache):
    import shutil
    base = tmp_path / "bank"
    shutil.copytree(FIXTURES / "problems", base / "problems")
    shutil.copytree(FIXTURES / "reference", base / "reference")
    (base / "reference" / "lru.py").write_text(REFERENCE.replace(
        "return list(self.data)", "raise RuntimeError('reference bug 42')"))
    broken = load_problem(base / "problems" / "001-lru-cache")
    report, d = run(broken, cache, REFERENCE)
    assert d["verdict"] == "IE" and d["internal_error"] == "internal error"
    assert "reference bug 42" in report.ie_cause
    assert "reference bug 42" not in json.dumps(d)


def test_bad_arguments_raise(problem, cache):
    with pytest.raises(ValueError):
        grade(problem, REFERENCE, suite="secret", cache=cache)
    with pytest.raises(ValueError):
        grade(problem, REFERENCE, device="tpu", cache=cache)
    if not os.path.exists("/dev/nvidiactl"):
        with pytest.raises(ValueError):
            grade(problem, REFERENCE, device="cuda", cache=cache)


def test_public_expectations_come_from_the_reference_cache(problem, monkeypatch, tmp_path):
    from judge import public_expectations

    monkeypatch.setenv("KVPRACTICE_CACHE", str(tmp_path))
    exp = public_expectations(problem)
    assert list(exp) == [t.name for t in problem.tests("public")]
    entry = exp["public/test_basic.py::test_eviction_order"]
    assert entry["outcome"] == "passed" and entry["observations"][0] == {
        "label": "gets", "value": [1, None, 1, 3]}


@BOTH_PATHS
def test_an_endless_loop_at_import_is_tle(problem, cache):
    spinning = REFERENCE + "\nwhile True:\n    pass\n"
    _, d = run(floor_lowered(problem, SPIN_FLOOR_S), cache, spinning, suite="public")
    assert d["verdict"] == "TLE"
    assert [t["verdict"] for t in d["tests"]] == ["TLE", "NR"]
    assert "import" in d["first_failure"]["message"]
