"""The problem list with a bank of hundreds (issue 18): grouped by book and chapter, filtered by
difficulty, tag, text and the visitor's status, each problem's status for the visitor (solved /
tried), in both languages, and fast: measured on 250 generated problems
(tests/problem_list_support.py)."""

from __future__ import annotations

import re
import statistics
import time

import pytest
from fastapi.testclient import TestClient
from problem_list_support import BOOKS, DIFFS, TAGS, generated_bank

from web.app import create_app
from web.settings import Settings

from e2e.fake_grader import quick
from web_platform.test_api import wait_done

HTML = {"Accept": "text/html"}
BUDGET_S = 0.300


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("list")
    bank = generated_bank(root, 250)
    st = Settings(data_dir=root / "data", problems_dir=bank, reference_dir=root / "reference",
                  reaper_interval_s=0.2, sse_poll_s=0.05)
    with TestClient(create_app(st, grader=quick, workers=1)) as c:
        c.get("/api/problems")  # a visitor cookie
        for problem, code in (("900", "ok"), ("901", "BUG"), ("902", "BUG"), ("902", "ok")):
            r = c.post("/api/submissions", json={"problem": problem, "code": code})
            assert r.status_code == 202, r.text
            wait_done(c, r.json()["id"])
        yield c


def _ids(html: str) -> list[str]:
    return re.findall(r'<td class="progress" data-problem="(\d+)">', html)


def _book_sections(html: str) -> list[str]:
    return re.findall(r'<section class="book" data-book="([^"]*)">', html)


def test_grouped_by_book_then_chapter(site):
    html = site.get("/?lang=en", headers=HTML).text
    # the platform's own problems first, then the books by name
    assert _book_sections(html) == ["", "cs", "llm", "python", "serving", "torch"]
    assert "This platform&#39;s problems" in html or "This platform's problems" in html
    assert len(_ids(html)) == 251 and "251 of 251 problems" in html
    serving = html.split('data-book="serving"')[1].split("<section")[0]
    chapters = re.findall(r"<summary>(serving chapter \d)", serving)
    assert chapters == [f"serving chapter {i}" for i in (1, 6, 4, 2, 7, 5, 3)]  # first number
    ids = _ids(serving)
    assert "900" in ids and "901" not in ids  # 901 is in the "python" book


def _generated(pred) -> list[str]:
    """The numbers of the generated problems (tests/problem_list_support.py) meeting pred."""
    return [str(900 + i) for i in range(250) if pred(i, BOOKS[i % 5], DIFFS[i % 3],
                                                     {TAGS[i % 7], TAGS[(i * 3 + 1) % 7]})]


def test_filters_by_difficulty_tag_text_and_status(site):
    def ids(query):
        return sorted(i for i in _ids(site.get(query, headers=HTML).text) if i != "141")

    assert ids("/?difficulty=hard") == sorted(_generated(lambda i, b, d, t: d == "hard"))
    assert ids("/?tag=routing") == sorted(_generated(lambda i, b, d, t: "routing" in t))
    # every word, anywhere in the number, title, slug, chapter, book or tags
    assert ids("/?q=gen-cs-53") == ["953"]
    assert ids("/?q=GEN-TORCH-14") == sorted(_generated(
        lambda i, b, d, t: "gen-torch-14" in f"gen-{b}-{i}")) == ["1042", "1047"]
    assert ids("/?difficulty=easy&q=Serving+chapter") == sorted(_generated(
        lambda i, b, d, t: d == "easy" and b == "serving"))
    assert ids("/?tag=numpy&difficulty=medium&q=torch") == sorted(_generated(
        lambda i, b, d, t: "numpy" in t and d == "medium" and b == "torch"))
    assert _ids(site.get("/?q=two-level-lru", headers=HTML).text) == ["141"]
    assert "No problem matches these filters." in site.get("/?q=zzzz", headers=HTML).text
    # unknown values are ignored, not an error
    assert len(_ids(site.get("/?difficulty=impossible&status=x", headers=HTML).text)) == 251


def test_each_problems_status_for_the_visitor(site):
    html = site.get("/?lang=en", headers=HTML).text
    cells = dict(re.findall(r'<td class="progress" data-problem="(\d+)">(.*?)</td>', html, re.S))
    assert "solved" in cells["900"] and "v-AC" in cells["900"]
    assert "tried" in cells["901"] and "v-AC" not in cells["901"]
    assert "solved" in cells["902"]  # a WA, then an AC
    assert cells["903"].strip() == "–"
    assert _ids(site.get("/?status=solved", headers=HTML).text) == ["900", "902"]
    assert _ids(site.get("/?status=tried", headers=HTML).text) == ["901"]
    assert len(_ids(site.get("/?status=new", headers=HTML).text)) == 248
    assert "2 solved" in html and "1 tried" in html
    other = TestClient(site.app)  # another visitor has solved nothing
    assert _ids(other.get("/?status=solved", headers=HTML).text) == []


def test_in_chinese(site):
    html = site.get("/?lang=zh", headers=HTML).text
    for words in ("本平台的题目", "共 251 题，显示 251 题", "已通过 2", "尝试过 1", "困难", "筛选",
                  "标签", "搜索"):
        assert words in html, words
    assert "没有符合这些筛选条件的题目。" in site.get("/?lang=zh&q=zzzz", headers=HTML).text


def test_fast_with_250_problems(site):
    site.get("/", headers=HTML)  # templates compiled, caches warm
    times = []
    for _ in range(5):
        t = time.perf_counter()
        assert site.get("/", headers=HTML).status_code == 200
        times.append(time.perf_counter() - t)
    # the median, so one pause of a busy machine does not decide it
    assert statistics.median(times) < BUDGET_S, times
