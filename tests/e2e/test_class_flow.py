"""A class in Chromium: an instructor (whose browser is in Shanghai, UTC+8) and three students
sign up; the instructor makes a course and an assignment with a deadline and a late window, the
students join and submit on time; the instructor's page shows their submissions finishing without
a reload; the instructor moves the deadline a few seconds ahead, the students' page says (by the
server's clock) that it has passed, and they submit late; the gradebook and its CSV show each
score at the deadline, the late flags and ISO times. Graded by the stand-in e2e.fake_grader:quick
(AC unless the code says BUG), on the web fixture problem 901. Screenshots: artifacts/class/ (or
$KVP_ARTIFACTS/class)."""

from __future__ import annotations

import csv
import io
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from web.settings import REPO_ROOT

from e2e.test_browser import FIXTURE, _paste, serving
from e2e.waits import submit_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TOKEN = "class-flow-instructor-token"
PASSWORD = "correct horse battery"
ZONE, ZONE_OFFSET = "Asia/Shanghai", timedelta(hours=8)
CODE = (FIXTURE / "901-toy-lru/submissions/accepted/lru_plain_dict.py").read_text()
BUGGY = CODE + "\n# BUG\n"


@pytest.fixture(scope="module")
def server(fake_server):
    """conftest.py's fake_server: the fixture problems, the quick stand-in, the token."""
    return fake_server


def serve(data: Path, **env_extra):
    """`web.cli serve` on the fixture problems, graded by the quick stand-in; its base URL."""
    with serving(data, FIXTURE, ["--grader", "e2e.fake_grader:quick"],
                 {"PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{REPO_ROOT / 'tests'}",
                  "KVPRACTICE_INSTRUCTOR_TOKEN": TOKEN, **env_extra}) as base:
        yield base


def _sign_up(page, base: str, username: str, name: str, token: str = "") -> None:
    page.goto(f"{base}/signup?lang=en")
    page.fill("#signup-form input[name=username]", username)
    page.fill("#signup-form input[name=display_name]", name)
    page.fill("#signup-form input[name=password]", PASSWORD)
    if token:
        page.fill("#signup-form input[name=instructor_token]", token)
    with page.expect_navigation():
        page.click("#signup-form button[type=submit]")
    assert "/courses" in page.url, page.url


def _local_input(dt_utc: datetime) -> str:
    """What the instructor types in Shanghai for a UTC time."""
    return (dt_utc + ZONE_OFFSET).strftime("%Y-%m-%dT%H:%M:%S")


def _submit(page, base: str, code: str) -> str:
    page.goto(f"{base}/problems/901?lang=en")
    page.wait_for_selector(".cm-content")
    _paste(page, code)
    return submit_and_wait(page, timeout=60_000)


def _phase(page, url: str, want: str, timeout_s: float = 30.0) -> None:
    """Reload the assignment until the server's page says the deadline stands at `want`."""
    give_up = time.monotonic() + timeout_s
    while True:
        page.goto(url)
        if page.get_attribute("#phase", "data-phase") == want:
            return
        assert time.monotonic() < give_up, page.inner_text("#phase")
        page.wait_for_timeout(250)


def test_a_class_signs_up_submits_around_a_deadline_and_is_graded(server, browser, class_shots):
    t0 = time.monotonic()
    teacher_ctx = browser.new_context(timezone_id=ZONE, viewport={"width": 1280, "height": 900})
    teacher = teacher_ctx.new_page()
    _sign_up(teacher, server, "prof", "Prof P", token=TOKEN)
    teacher.fill("#create-course-form input[name=title]", "KV lab")
    with teacher.expect_navigation():
        teacher.click("#create-course-form button[type=submit]")
    course_url = teacher.url.split("?")[0]
    code = teacher.inner_text("#join-code").strip()

    # The form names the browser's zone and takes Shanghai times.
    assert teacher.inner_text("#assignment-form [data-tz-name] >> nth=1") == f"{ZONE}, GMT+8"
    now = datetime.now(timezone.utc).replace(microsecond=0, tzinfo=None)
    deadline, late_until = now + timedelta(hours=1), now + timedelta(hours=2)
    teacher.fill("#assignment-form input[name=title]", "Homework 1")
    teacher.fill("#assignment-form input[name=problems]", "901")
    teacher.fill("#assignment-form input[name=deadline]", _local_input(deadline))
    teacher.fill("#assignment-form input[name=late_until]", _local_input(late_until))
    teacher.fill("#assignment-form input[name=late_penalty]", "50")
    with teacher.expect_navigation():
        teacher.click("#assignment-form button[type=submit]")
    assignment_url = teacher.url.split("?")[0]
    # stored as the UTC instant, shown back in Shanghai time
    stamp = teacher.get_attribute("main time", "datetime")
    assert stamp.startswith(deadline.isoformat()), (stamp, deadline)
    assert teacher.inner_text("main time").endswith("(GMT+8)")
    # the form shows it as every page writes times (issue 30 item 4), in Shanghai time
    shown = deadline + ZONE_OFFSET
    assert teacher.input_value("#times-form input[name=deadline]") == \
        f"{shown.day} {shown:%b %Y %H:%M}" + (f":{shown:%S}" if shown.second else "")

    watch = teacher_ctx.new_page()  # the instructor page, left open: it must refresh itself
    watch.goto(f"{server}/instructor?lang=en")
    watch.wait_for_selector("#instructor-live", state="attached")

    students = {}
    for username, name in (("s1", "Ann"), ("s2", "Ben"), ("s3", "Cai")):
        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        page = ctx.new_page()
        _sign_up(page, server, username, name)
        page.fill("#join-form input[name=code]", code)
        with page.expect_navigation():
            page.click("#join-form button[type=submit]")
        assert page.url.split("?")[0] == course_url
        students[username] = page
    s1, s2, s3 = students["s1"], students["s2"], students["s3"]

    # On time: Ann right, Ben wrong; Cai nothing yet.
    on_time = {"s1": _submit(s1, server, CODE), "s2": _submit(s2, server, BUGGY)}
    assert s1.inner_text(".submit-result .report-head .verdict").strip()
    for sid in on_time.values():  # seen finishing on the open instructor page, with no reload
        watch.wait_for_selector(f'#recent-submissions tr[data-submission="{sid}"][data-status="done"]',
                                timeout=120_000)  # a bound, not a wait: the fake grader is quick, a busy host is not
    assert "Ben" in watch.inner_text(f'#recent-submissions tr[data-submission="{on_time["s2"]}"]')
    watch.screenshot(path=str(class_shots / "instructor-live.png"), full_page=True)
    s1.goto(assignment_url)
    assert s1.get_attribute("#phase", "data-phase") == "open"
    assert s1.get_attribute("#my-state", "data-state") == "solved"

    # The instructor moves the deadline a few seconds ahead (in Shanghai time)...
    soon = datetime.now(timezone.utc).replace(microsecond=0, tzinfo=None) + timedelta(seconds=3)
    teacher.goto(assignment_url)
    teacher.fill("#times-form input[name=deadline]", _local_input(soon))
    with teacher.expect_navigation():
        teacher.click("#times-form button[type=submit]")
    assert teacher.get_attribute("main time", "datetime").startswith(soon.isoformat())
    # ... and the students submit once the server says it has passed.
    _phase(s2, assignment_url, "late window")
    s2.screenshot(path=str(class_shots / "student-late-window.png"), full_page=True)
    late = {"s2": _submit(s2, server, CODE), "s3": _submit(s3, server, CODE),
            "s1": _submit(s1, server, BUGGY)}
    s3.goto(assignment_url)
    assert s3.get_attribute("#my-state", "data-state") == "late"

    teacher.goto(assignment_url + "?lang=en")
    cells = {u: teacher.locator(f'#assignment-book tr[data-username="{u}"] td[data-late]')
             for u in students}
    got = {u: (c.get_attribute("data-score-at-deadline"), c.get_attribute("data-late"))
           for u, c in cells.items()}
    # Ann: AC on time (her late WA does not count); Ben: 0 at the deadline, his late AC at 50 %;
    # Cai: nothing at the deadline, late AC.
    assert got == {"s1": ("1.0", "no"), "s2": ("0.0", "yes"), "s3": ("", "yes")}, got
    assert "50 %" in cells["s2"].inner_text() and "late" in cells["s3"].inner_text()
    teacher.screenshot(path=str(class_shots / "gradebook.png"), full_page=True)

    csv_url = server + teacher.get_attribute("#csv-link", "href")
    resp = teacher.request.get(csv_url)
    assert resp.ok and resp.headers["content-type"].startswith("text/csv")
    rows = {r["student_id"]: r for r in csv.DictReader(io.StringIO(resp.text()))}
    assert set(rows) == {"s1", "s2", "s3"}
    assert [rows[u]["901 score at deadline %"] for u in ("s1", "s2", "s3")] == ["100.0", "0.0", ""]
    assert [rows[u]["901 late"] for u in ("s1", "s2", "s3")] == ["", "late", "late"]
    assert rows["s1"]["901 submission"] == on_time["s1"]
    assert rows["s2"]["901 submission"] == late["s2"] and rows["s3"]["901 submission"] == late["s3"]
    for u in students:
        when = datetime.fromisoformat(rows[u]["901 submitted at"])
        assert when.utcoffset() == timedelta(0), rows[u]["901 submitted at"]
        is_late = (when.replace(tzinfo=None) > soon)
        assert is_late == (rows[u]["901 late"] == "late"), (u, when, soon)
    # another student's code stays out of reach of a student
    assert s3.goto(f"{server}/submissions/{on_time['s1']}").status == 404

    for ctx in {teacher_ctx, *(p.context for p in students.values())}:
        ctx.close()
    elapsed = time.monotonic() - t0
    # printed, not bounded: its wall time is the machine's load (34 s idle, 71 s on a busy one)
    print(f"\nclass flow: {elapsed:.1f} s; screenshots in {class_shots}")
