"""The instructor pages through the requests a browser makes (TestClient): "Regrade all" asks
first, "Recent submissions" is paged and filtered and names each student, the page's change
stamp answers when something runs or finishes, and an assignment's times are read in the
instructor's own zone and can be moved."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from datetime import datetime

import pytest
from accounts_support import join, make_course, post_form, signup
from fastapi.testclient import TestClient
from sqlalchemy import select

from web.app import create_app
from web.store.accounts import Account, Assignment
from web.store.db import DONE, LIVE, Regrade, Submission

from e2e.fake_grader import quick
from web_platform.test_api import ACCEPTED, TOKEN, make_settings, wait_done

JSON = {"Origin": "http://testserver"}


@pytest.fixture
def app(tmp_path):
    app = create_app(make_settings(tmp_path), grader=quick, workers=1)
    with TestClient(app):
        yield app


def staff(app) -> TestClient:
    c = TestClient(app)
    assert post_form(c, "/instructor/login", token=TOKEN).status_code == 303
    return c


def live_stamp(page: str) -> str:
    """The change stamp the instructor page was rendered with (its live poll starts from it)."""
    return re.search(r'data-live-stamp="([0-9a-f]+)"', page).group(1)


def submit(c, code=ACCEPTED) -> int:
    r = c.post("/api/submissions", json={"problem": "901", "code": code}, headers=JSON)
    assert r.status_code == 202, r.text
    sid = r.json()["id"]
    wait_done(c, sid)
    return sid


def test_regrade_all_asks_first_and_only_the_post_starts_it(app):
    teacher = staff(app)
    submit(signup(app, "alice"))
    page = teacher.get("/instructor").text
    assert 'href="/instructor/regrade/901"' in page
    assert 'action="/instructor/regrade/901"' not in page  # no one-click regrade any more
    confirm = teacher.get("/instructor/regrade/901")
    assert confirm.status_code == 200
    assert "Regrade every submission of 901 a gradebook counts" in confirm.text
    assert 'id="confirm-form"' in confirm.text and 'action="/instructor/regrade/901"' in confirm.text
    zh = teacher.get("/instructor/regrade/901?lang=zh").text
    assert "确定吗" in zh and "901" in zh
    with app.state.ctx.db.session() as s:
        assert s.scalars(select(Regrade)).all() == []  # asking started nothing
    # a student is sent to the instructor sign-in, and cannot start one either
    student = signup(app, "bob")
    assert student.get("/instructor/regrade/901", follow_redirects=False).status_code == 303
    post_form(student, "/instructor/regrade/901")
    with app.state.ctx.db.session() as s:
        assert s.scalars(select(Regrade)).all() == []
    assert teacher.get("/instructor/regrade/nope").status_code == 404
    assert post_form(teacher, "/instructor/regrade/901").status_code == 303
    with app.state.ctx.db.session() as s:
        assert [r.problem_id for r in s.scalars(select(Regrade))] == ["901"]


def _stored(app, visitor_id: int, n: int, problem: str, verdict: str) -> None:
    with app.state.ctx.db.session() as s:
        for i in range(n):
            code = f"# stored {problem} {i}\n"
            s.add(Submission(visitor_id=visitor_id, problem_id=problem, code=code,
                             code_sha256=hashlib.sha256(code.encode()).hexdigest(),
                             status=DONE, verdict=verdict, score=1.0 if verdict == "AC" else 0.0,
                             kind=LIVE))
        s.commit()


def _rows(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr data-submission="(\d+)"', html)]


def test_recent_submissions_are_paged_filtered_and_name_their_student(app):
    teacher = staff(app)
    alice, bob = signup(app, "alice", name="Alice A"), signup(app, "bob", name="Bob B")
    submit(alice)
    wrong = submit(bob, code=ACCEPTED + "\n# BUG\n")
    with app.state.ctx.db.session() as s:
        vid = {a.username: a.visitor_id for a in s.scalars(select(Account))}
    _stored(app, vid["alice"], 33, "901", "AC")
    _stored(app, vid["bob"], 2, "902", "RE")  # 37 in all

    first = teacher.get("/instructor").text
    assert len(_rows(first)) == 30 and "37 submissions, page 1 of 2" in first
    assert 'rel="next" href="/instructor?page=2#recent"' in first and 'rel="prev"' not in first
    second = teacher.get("/instructor?page=2").text
    assert len(_rows(second)) == 7 and set(_rows(first)).isdisjoint(_rows(second))
    assert max(_rows(second)) < min(_rows(first))  # newest first, no row twice
    assert "Bob B</td>" not in first and "Bob B <small>(bob)</small>" in first

    by_student = _rows(teacher.get("/instructor?student=BOB").text)
    assert len(by_student) == 3 and wrong in by_student
    assert _rows(teacher.get("/instructor?verdict=WA").text) == [wrong]
    only = teacher.get("/instructor?problem=902&student=bob&verdict=RE").text
    assert len(_rows(only)) == 2 and "2 submissions, page 1 of 1" in only
    assert len(_rows(teacher.get(f"/instructor?student=%23{vid['bob']}").text)) == 3
    none = teacher.get("/instructor?student=nobody%25").text  # % is a letter here, not a pattern
    assert _rows(none) == [] and "No submission matches." in none
    # a page past the end shows the last one; the JSON overview takes the same filter
    assert _rows(teacher.get("/instructor?page=99").text) == _rows(second)
    data = teacher.get("/api/instructor/overview?verdict=WA").json()
    assert [r["id"] for r in data["recent"]] == [wrong] and data["recent"][0]["username"] == "bob"
    assert data["recent_page"]["total"] == 1
    zh = teacher.get("/instructor?lang=zh").text
    assert "共 37 次提交，第 1/2 页" in zh


def test_the_change_stamp_answers_when_a_submission_runs_and_finishes(app):
    teacher = staff(app)
    page = teacher.get("/instructor").text
    stamp = live_stamp(page)
    t0 = time.monotonic()
    quiet = teacher.get(f"/api/instructor/changes?since={stamp}&wait_s=0.6").json()
    assert quiet == {"stamp": stamp, "changed": False} and time.monotonic() - t0 >= 0.5
    # a long poll waiting while a student submits answers with a new stamp, before its time
    answer = {}

    def poll():
        t = time.monotonic()
        answer.update(teacher.get(f"/api/instructor/changes?since={stamp}&wait_s=20").json(),
                      seconds=time.monotonic() - t)

    waiter = threading.Thread(target=poll)
    waiter.start()
    time.sleep(0.3)  # let the poll start waiting; it would answer "changed" even if it had not
    submit(signup(app, "carol"))
    waiter.join(25)
    assert answer["changed"] is True and answer["stamp"] != stamp and answer["seconds"] < 15
    after = live_stamp(teacher.get("/instructor").text)
    assert after != stamp
    # the live sections the page swaps are there, and only staff may wait on it
    assert all(f'id="{i}" data-live' in page for i in ("live-cards", "workers", "recent-list"))
    assert TestClient(app).get("/api/instructor/changes?wait_s=0").status_code in (401, 403)


def test_a_change_while_the_page_is_read_leaves_it_a_stamp_that_answers_at_once(app, monkeypatch):
    """A submission that finishes between the page's read of its rows and of its stamp must not
    leave the page with rows older than its stamp: its live poll would wait for a change that
    has already happened (CI: a row of the class flow never turned done)."""
    from web.api import instructor
    teacher = staff(app)
    sid = submit(signup(app, "dora"))
    read_rows = instructor.recent_submissions

    def rows_then_a_change(*args, **kwargs):
        listing = read_rows(*args, **kwargs)
        with app.state.ctx.db.session() as s:  # the submission finishes (again) just now
            s.get(Submission, sid).finished_at = datetime(2099, 1, 1)
            s.commit()
        return listing

    with monkeypatch.context() as patched:  # only this page's read is raced
        patched.setattr(instructor, "recent_submissions", rows_then_a_change)
        page = teacher.get("/instructor").text
    stamp = live_stamp(page)
    answer = teacher.get(f"/api/instructor/changes?since={stamp}&wait_s=0").json()
    assert answer["changed"] is True and answer["stamp"] != stamp


def test_assignment_times_are_the_instructors_local_time_and_can_be_moved(app):
    teacher = signup(app, "prof", instructor_token=TOKEN)
    cid, code = make_course(teacher)
    student = signup(app, "dora")
    join(student, code)
    # typed in UTC+8 (what pages.js sends for a browser in Shanghai): 08:00 there is 00:00 UTC
    r = post_form(teacher, f"/courses/{cid}/assignments", title="HW", problems="901",
                  opens_at="2020-01-01T08:00:00", deadline="2030-01-02T08:00:00",
                  late_until="", late_penalty="0", rule="best", tz_offset_min="480")
    assert r.status_code == 303, r.text
    aid = int(r.headers["location"].rsplit("/", 1)[1])
    with app.state.ctx.db.session() as s:
        a = s.get(Assignment, aid)
        assert (a.opens_at, a.deadline) == (datetime(2020, 1, 1), datetime(2030, 1, 2))
    course = teacher.get(f"/courses/{cid}").text
    assert '<time datetime="2030-01-02T00:00:00Z">' in course and "data-tz-name" in course
    assert 'data-phase="open"' in student.get(f"/courses/{cid}/assignments/{aid}").text
    form = teacher.get(f"/courses/{cid}/assignments/{aid}").text
    assert 'id="times-form"' in form and 'data-utc="2030-01-02T00:00:00Z"' in form

    # moved from UTC-5: the deadline passed, a late window open until 2030
    r = post_form(teacher, f"/courses/{cid}/assignments/{aid}/times",
                  opens_at="2019-12-31T19:00:00", deadline="2021-01-01T00:00:00",
                  late_until="2030-01-01T00:00:00", late_penalty="25", rule="last",
                  tz_offset_min="-300")
    assert r.status_code == 303, r.text
    with app.state.ctx.db.session() as s:
        a = s.get(Assignment, aid)
        assert (a.deadline, a.late_until) == (datetime(2021, 1, 1, 5), datetime(2030, 1, 1, 5))
        assert (a.late_penalty, a.rule) == (0.25, "last")
    mine = student.get(f"/courses/{cid}/assignments/{aid}").text
    assert 'data-phase="late window"' in mine and "submissions now count as late" in mine
    assert "迟交" in student.get(f"/courses/{cid}/assignments/{aid}?lang=zh").text

    # a student cannot move them; a deadline before the opening or a zone off the globe is refused
    assert post_form(student, f"/courses/{cid}/assignments/{aid}/times",
                     deadline="2031-01-01T00:00:00").status_code == 403
    assert post_form(teacher, f"/courses/{cid}/assignments/{aid}/times",
                     opens_at="2022-01-01T00:00:00",
                     deadline="2021-01-01T00:00:00").status_code == 422
    assert post_form(teacher, f"/courses/{cid}/assignments/{aid}/times",
                     deadline="2021-01-01T00:00:00", tz_offset_min="100000").status_code == 422
    with app.state.ctx.db.session() as s:
        assert s.get(Assignment, aid).deadline == datetime(2021, 1, 1, 5)
