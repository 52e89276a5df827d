"""The page's runner (web/pyrunner/kvp_runner.py) in CPython: the same file runs in Pyodide."""

from __future__ import annotations

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
    assert ce["verdict"] == "CE" and ce["compile_error"]["message"].startswith("line 1")
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
