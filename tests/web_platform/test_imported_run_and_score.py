"""Imported problems (issue 18 items 5 and 6), on fixtures written in the handbook's format
(tests/fixtures/handbook_more): a file that fails only an example is not scored 100 %; a
pure-Python problem runs in the page; a numpy one's Run is a practice run on the server (the
public tests, in the sandbox, not stored, no score, the submissions' limits)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from judge import grade, load_problem
from judge.cli.main import main as judge_main
from web.app import create_app
from web.settings import Settings

MORE = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_more"
BLOCKS = MORE / "serving" / "block-table"
NORMS = MORE / "numeric" / "row-norms"
SOLUTION = (BLOCKS / "solution.py").read_text(encoding="utf-8")
# Wrong on one case that only an example tests (the hidden sweep starts at 20 tokens).
EXAMPLE_ONLY = SOLUTION.replace("    return (tokens",
                                "    if (tokens, block_size) == (5, 4):\n        return 3\n"
                                "    return (tokens")
HTML = {"Accept": "text/html"}

pytestmark = pytest.mark.usefixtures("run_cache")


@pytest.fixture(scope="module")
def bank(tmp_path_factory) -> Path:
    problems = tmp_path_factory.mktemp("imported") / "problems"
    assert judge_main(["import", str(MORE), "--problems", str(problems), "--no-check"]) == 0
    return problems


def test_failing_only_an_example_lowers_the_score(bank):
    p = load_problem(bank / "901-block-table")
    report = grade(p, EXAMPLE_ONLY)
    verdicts = {t.name: str(t.verdict) for t in report.tests}
    assert verdicts["public/test_examples.py::test_example_statement"] == "WA"
    assert all(v == "AC" for n, v in verdicts.items() if n.startswith("hidden/")), verdicts
    assert report.verdict.value == "WA"
    assert report.scored_suites == ["public", "hidden"]
    assert 0 < report.score < 1.0  # the examples count: 4 of 5 tests passed
    assert report.score == pytest.approx(4 / 5)
    assert grade(p, SOLUTION).score == 1.0


def test_a_native_problem_still_scores_its_hidden_tests_only():
    p = load_problem("141")
    assert p.config.source is None
    report = grade(p, p.reference_path.read_text(encoding="utf-8"), suite="all")
    assert report.scored_suites == ["hidden"]


def _site(bank: Path, tmp_path: Path, **kw):
    st = Settings(data_dir=tmp_path / "data", problems_dir=bank,
                  reference_dir=bank.parent / "reference", **kw)
    return TestClient(create_app(st, workers=0))


def test_pure_python_runs_in_the_page_and_numpy_runs_on_the_server(bank, tmp_path):
    assert load_problem(bank / "901-block-table").browser is True
    assert load_problem(bank / "900-row-norms").browser is False
    with _site(bank, tmp_path) as c:
        page = c.get("/problems/901?lang=en", headers=HTML).text
        assert '"browser": true' in page and '"server_run": false' in page
        page = c.get("/problems/900?lang=en", headers=HTML).text
        assert '"browser": false' in page and '"server_run": true' in page
        assert "Run sends the public tests to the server (a practice run: not stored, no score)" \
            in page
        zh = c.get("/problems/900?lang=zh", headers=HTML).text
        assert "练习运行：不保存、不计分" in zh
        # a pure-Python problem's Run is the page's: the server refuses to do it
        r = c.post("/api/practice-runs", json={"problem": "901", "code": SOLUTION})
        assert r.status_code == 409


def test_a_practice_run_grades_the_public_tests_in_the_sandbox_and_stores_nothing(bank,
                                                                                   tmp_path):
    pytest.importorskip("numpy")
    solution = (NORMS / "solution.py").read_text(encoding="utf-8")
    with _site(bank, tmp_path) as c:
        r = c.post("/api/practice-runs", json={"problem": "900", "code": solution})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["practice"] is True and body["stored"] is False
        report = body["report"]
        assert report["verdict"] == "AC" and report["score"] is None
        assert [t["name"] for t in report["tests"]] == [
            "public/test_examples.py::test_example_three_four"]  # the public tests only
        r = c.post("/api/practice-runs", json={"problem": "900",
                                               "code": (NORMS / "starter.py").read_text()})
        assert r.json()["report"]["verdict"] not in ("AC", "IE")
        assert c.get("/api/submissions").json()["submissions"] == []


def test_practice_runs_have_the_submissions_limits(bank, tmp_path):
    calls = []

    def fake(problem, source):
        calls.append(source)
        return {"verdict": "AC", "score": 1.0, "tests": []}

    with _site(bank, tmp_path, rate_limit_count=2, rate_limit_window_s=600) as c:
        c.app.state.practice_grader = fake
        for _ in range(2):
            assert c.post("/api/practice-runs", json={"problem": "900", "code": "x = 1"}
                          ).status_code == 200
        r = c.post("/api/practice-runs", json={"problem": "900", "code": "x = 1"})
        assert r.status_code == 429 and "Retry-After" in r.headers
        assert re.search(r"at most 2 submissions per 600 s", r.json()["error"]["message"])
        assert len(calls) == 2
        big = "x" * (c.app.state.ctx.settings.max_code_bytes + 1)
        assert c.post("/api/practice-runs", json={"problem": "900", "code": big}
                      ).status_code in (400, 413)
        assert c.post("/api/practice-runs", json={"problem": "nope", "code": "x"}
                      ).status_code == 404
