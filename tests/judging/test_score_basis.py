"""Issue 10, item 16: the public expectations are served to every browser, so a file that
replays them passes every public test. It used to earn those tests' weight (2/7 of the score
on this fixture); now a problem with hidden tests is scored on its hidden tests only, and the
report says so. A problem without hidden tests keeps scoring its public ones."""

from __future__ import annotations

import io
import shutil

from judge import load_problem, public_expectations
from judge.cli.console import Console, print_report

from grading.test_grade_end_to_end import FIXTURES, REFERENCE, run

REPLAY = r'''
EXPECTED = %r
import judge_runner.plugin as _plugin
_emit = _plugin.Observer.__call__
def _replay(self, label, value):
    seen = (EXPECTED.get("public/" + self._name) or {}).get("observations") or []
    if self._i < len(seen):
        value = seen[self._i]["value"]
    _emit(self, label, value)
_plugin.Observer.__call__ = _replay

class LRUCache:
    def __init__(self, capacity):
        pass
    def get(self, key):
        return None
    def put(self, key, value):
        pass
    def keys(self):
        return []
    def __len__(self):
        return 0
'''


def test_a_replayed_public_suite_scores_nothing(problem, cache, monkeypatch,
                                                tmp_path):
    monkeypatch.setenv("KVPRACTICE_CACHE", str(tmp_path))
    source = REPLAY % (public_expectations(problem),)
    _, d = run(problem, cache, source)
    public = [t for t in d["tests"] if t["suite"] == "public"]
    assert public and all(t["verdict"] == "AC" for t in public)  # the replay works ...
    assert d["score"] == 0.0 and d["verdict"] != "AC"               # ... and earns nothing
    assert d["scored_suites"] == ["hidden"]
    out = io.StringIO()
    print_report(Console("en", stream=out, color=False), d)
    assert "The score counts the hidden tests only" in out.getvalue()


def test_the_reference_scores_full_marks_on_hidden_tests(problem, cache):
    _, d = run(problem, cache, REFERENCE)
    assert d["score"] == 1.0 and d["scored_suites"] == ["hidden"]


def test_a_problem_without_hidden_tests_scores_its_public_ones(tmp_path, cache):
    base = tmp_path / "bank"
    shutil.copytree(FIXTURES / "problems", base / "problems")
    shutil.copytree(FIXTURES / "reference", base / "reference")
    shutil.rmtree(base / "problems" / "001-lru-cache" / "tests" / "hidden")
    only_public = load_problem(base / "problems" / "001-lru-cache")
    wrong = (FIXTURES / "problems/001-lru-cache/submissions/wrong_answer/fifo.py").read_text()
    _, d = run(only_public, cache, wrong)
    assert d["scored_suites"] == ["public"] and d["score"] == 0.5
    _, d = run(only_public, cache, REFERENCE)
    assert d["score"] == 1.0
