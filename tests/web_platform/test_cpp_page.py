"""A C++ problem in the page (issue 31): the editor is in C++ mode (data-language="cpp", read
by problem.js, which builds CodeMirror with @codemirror/lang-cpp), the page says in English and
in Chinese that Run is a practice run on the server, and Run is one: POST /api/practice-runs
compiles the file with the test and answers the report of the example cases, storing nothing
and scoring nothing. Fixture: tests/fixtures/handbook_cpp/cpp/lru-cache (ours)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from judge.cli.main import main as judge_main
from judge.grading.cpp import toolchain
from web.app import create_app
from web.settings import Settings

LRU = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_cpp" / "cpp" / "lru-cache"
HTML = {"Accept": "text/html"}
NOTE_EN = "C++: Run compiles your file with the tests on the server and runs the example cases"
NOTE_ZH = "C++：“运行”在服务器上把你的文件和测试一起编译，只跑样例"

pytestmark = pytest.mark.usefixtures("run_cache")


@pytest.fixture(scope="module")
def bank(tmp_path_factory) -> Path:
    problems = tmp_path_factory.mktemp("cpp-page") / "problems"
    assert judge_main(["import", str(LRU), "--problems", str(problems), "--no-check"]) == 0
    return problems


def _site(bank: Path, tmp_path: Path) -> TestClient:
    st = Settings(data_dir=tmp_path / "data", problems_dir=bank,
                  reference_dir=bank.parent / "reference")
    return TestClient(create_app(st, workers=0))


def _config(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="config">(.*?)</script>', page, re.S)
    assert m, "the page has no config"
    return json.loads(m.group(1))


def test_the_page_of_a_cpp_problem_has_the_cpp_editor_and_says_run_is_a_server_run(bank,
                                                                                   tmp_path):
    with _site(bank, tmp_path) as c:
        page = c.get("/problems/900?lang=en", headers=HTML).text
        assert re.search(r'<div id="editor" class="editor" data-language="cpp"', page)
        config = _config(page)
        assert config["browser"] is False and config["server_run"] is True
        assert 'id="py-sandbox"' not in page  # no page Python for a C++ problem
        assert NOTE_EN in page and "Loading Python in the page" not in page
        assert "tests need numpy or torch" not in page  # not the Python problems' reason
        assert 'title="900-lru-cache.cpp"' in page
        zh = c.get("/problems/900?lang=zh", headers=HTML).text
        assert NOTE_ZH in zh and NOTE_EN not in zh
        assert "练习运行：不保存、不计分" in zh
        # the test file is never served: the page's public files hold no test.cpp
        api = c.get("/api/problems/900").json()
        assert "test.cpp" not in json.dumps(api.get("public_tests") or {})


@pytest.mark.skipif(not toolchain.find().pick("address,undefined"),
                    reason="no C++ compiler with AddressSanitizer here")
def test_run_of_a_cpp_problem_is_a_practice_run_with_the_example_cases(bank, tmp_path):
    with _site(bank, tmp_path) as c:
        r = c.post("/api/practice-runs", json={
            "problem": "900", "code": (LRU / "solution.cpp").read_text(encoding="utf-8")})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["practice"] is True and body["stored"] is False
        report = body["report"]
        assert report["verdict"] == "AC" and report["score"] is None
        assert [t["name"] for t in report["tests"]] == [
            "public/test.cpp::example_basic", "public/test.cpp::example_evict"]
        r = c.post("/api/practice-runs", json={
            "problem": "900", "code": (LRU / "starter.cpp").read_text(encoding="utf-8")})
        report = r.json()["report"]
        assert report["verdict"] == "WA"
        evict = {t["name"]: t for t in report["tests"]}["public/test.cpp::example_evict"]
        assert evict["verdict"] == "WA" and evict["failure"]["expected"] == "-1"
        assert c.get("/api/submissions").json()["submissions"] == []
