"""Issue 12 items 11 and 12: best and latest verdict per problem (the home page, the
instructor's gradebook), the gradebook's CSV behind the instructor token (safe from CSV
injection), and the instructor page in Chinese."""

from __future__ import annotations

import csv
import io
import re

import pytest
from fastapi.testclient import TestClient

from web.app import create_app
from web.store.gradebook import gradebook_csv, safe_cell

from e2e.fake_grader import quick
from web_platform.test_api import ACCEPTED, TOKEN, make_settings, wait_done

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
HOSTILE_NAME = "=HYPERLINK(\"http://evil\")"


def _submit(client, code: str) -> dict:
    r = client.post("/api/submissions", json={"problem": "901", "code": code})
    assert r.status_code == 202, r.text
    return wait_done(client, r.json()["id"])


def _become(client, name: str) -> None:
    """A new visitor (a fresh cookie) with this display name."""
    client.cookies.clear()
    client.get("/api/problems")
    client.post("/me", content=f"display_name={name}".encode(), headers=FORM)


@pytest.fixture(scope="module")
def classroom(tmp_path_factory):
    """Student A: AC then WA on 901; student B (a hostile name): one WA. Yields the client
    (as student A) and both visitors' cookies."""
    app = create_app(make_settings(tmp_path_factory.mktemp("gradebook")), grader=quick, workers=1)
    with TestClient(app) as c:
        from urllib.parse import quote
        _become(c, quote(HOSTILE_NAME))
        b_wrong = _submit(c, ACCEPTED + "\n# BUG")
        b_cookies = dict(c.cookies)
        _become(c, "Alice")
        a_ok = _submit(c, ACCEPTED)
        a_wrong = _submit(c, ACCEPTED + "\n# BUG")
        assert (a_ok["verdict"], a_wrong["verdict"], b_wrong["verdict"]) == ("AC", "WA", "WA")
        yield {"client": c, "a_ok": a_ok["id"], "a_wrong": a_wrong["id"],
               "b_wrong": b_wrong["id"], "b_cookies": b_cookies}


def test_the_gradebook_keeps_the_best_and_the_latest(classroom):
    c = classroom["client"]
    book = c.get("/api/instructor/gradebook", headers={"X-Instructor-Token": TOKEN}).json()
    assert book["problems"][0] == "901"
    by_name = {s["display_name"]: s for s in book["students"]}
    alice = by_name["Alice"]["cells"]["901"]
    assert alice["attempts"] == 2
    assert alice["best"] == {"submission": classroom["a_ok"], "verdict": "AC", "score": 1.0}
    assert alice["latest"] == {"submission": classroom["a_wrong"], "verdict": "WA", "score": 0.0}
    assert by_name["Alice"]["solved"] == 1
    bob = by_name[HOSTILE_NAME]["cells"]["901"]
    assert bob["best"]["verdict"] == bob["latest"]["verdict"] == "WA" and bob["attempts"] == 1
    assert by_name[HOSTILE_NAME]["solved"] == 0


def test_the_gradebook_needs_the_instructor_token(classroom):
    c = classroom["client"]
    for path in ("/api/instructor/gradebook", "/api/instructor/gradebook.csv"):
        assert c.get(path).status_code == 401
        assert c.get(path, headers={"X-Instructor-Token": "nope"}).status_code == 403


def test_the_csv_export_is_safe_to_open_in_a_spreadsheet(classroom):
    c = classroom["client"]
    r = c.get("/api/instructor/gradebook.csv", headers={"X-Instructor-Token": TOKEN})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert "attachment" in r.headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(r.text)))
    head = rows[0]
    assert head[:3] == ["student_id", "display_name", "solved"]
    col = {h: i for i, h in enumerate(head)}
    by_name = {row[1]: row for row in rows[1:]}
    alice = by_name["Alice"]
    assert (alice[col["901 best"]], alice[col["901 best score %"]]) == ("AC", "100")
    assert (alice[col["901 latest"]], alice[col["901 latest score %"]]) == ("WA", "0")
    assert alice[col["901 attempts"]] == "2"
    # The hostile display name arrives as text, not as a formula.
    assert "'" + HOSTILE_NAME in by_name
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row)


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\r=1"])
def test_every_formula_start_is_neutralised(text):
    assert safe_cell(text) == "'" + text
    book = {"problems": ["p"], "students": [{"id": 1, "display_name": text, "solved": 0,
                                              "cells": {}}]}
    row = list(csv.reader(io.StringIO(gradebook_csv(book))))[1]
    assert row[1] == "'" + text


def test_plain_cells_are_unchanged():
    assert [safe_cell(v) for v in ("Alice", 3, None, "a=b")] == ["Alice", "3", "", "a=b"]


def test_the_home_page_shows_solved_and_the_later_failure(classroom):
    c = classroom["client"]  # student A: AC, then WA
    html = c.get("/", headers={"Accept": "text/html"}).text
    cell = re.search(r'<td class="progress" data-problem="901">(.*?)</td>', html, re.S).group(1)
    assert "v-AC" in cell, cell
    latest = re.search(r'<span class="latest">(.*?)</span></a></span>', cell, re.S).group(1)
    assert f'/submissions/{classroom["a_wrong"]}' in latest and "v-WA" in latest, cell
    # The problem page still counts it solved (the explanation stays open).
    page = c.get("/problems/901", headers={"Accept": "text/html"}).text
    assert 'class="verdict v-AC"' in page


def test_a_student_with_only_failures_shows_them_once(classroom):
    c = TestClient(classroom["client"].app)
    c.cookies.update(classroom["b_cookies"])
    html = c.get("/", headers={"Accept": "text/html"}).text
    cell = re.search(r'<td class="progress" data-problem="901">(.*?)</td>', html, re.S).group(1)
    assert cell.count("v-WA") == 1 and "latest" not in cell, cell


def test_the_instructor_page_in_chinese_with_the_gradebook(classroom):
    c = TestClient(classroom["client"].app)
    c.post("/instructor/login", content=f"token={TOKEN}".encode(), headers=FORM)
    zh = c.get("/instructor?lang=zh", headers={"Accept": "text/html"}).text
    for words in ("成绩册", "评测进程", "题目", "最近的提交", "下载 CSV"):
        assert words in zh
    for english in ("Workers", "Recent submissions", "Gradebook", "run judge check"):
        assert english not in zh
    rows = re.findall(r'<tr data-student="\d+">', zh)
    assert len(rows) == 2
    en = c.get("/instructor?lang=en", headers={"Accept": "text/html"}).text
    assert "Gradebook" in en and "Workers" in en and 'href="/api/instructor/gradebook.csv"' in en
