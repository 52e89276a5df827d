"""Helpers for the tests of accounts and courses: sign up, sign in, make a course and an
assignment through the same forms a browser posts."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

from fastapi.testclient import TestClient

ORIGIN = "http://testserver"
FORM = {"Content-Type": "application/x-www-form-urlencoded", "Origin": ORIGIN}


def post_form(c: TestClient, path: str, **fields):
    return c.post(path, content=urlencode(fields).encode(), headers=FORM, follow_redirects=False)


def signup(app, username: str, password: str = "correct horse battery", name: str = "",
           instructor_token: str = "") -> TestClient:
    c = TestClient(app)
    r = post_form(c, "/signup", username=username, password=password, display_name=name or username,
                  instructor_token=instructor_token)
    assert r.status_code == 303, r.text
    return c


def utc_form(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds")


def make_course(teacher: TestClient, title: str = "Lab") -> tuple[int, str]:
    r = post_form(teacher, "/courses", title=title)
    assert r.status_code == 303, r.text
    cid = int(r.headers["location"].rsplit("/", 1)[1])
    page = teacher.get(f"/courses/{cid}").text
    code = re.search(r'id="join-code">([^<]+)<', page).group(1)
    return cid, code


def make_assignment(teacher: TestClient, cid: int, problems: str, deadline: datetime,
                    late_until: datetime | None = None, penalty: int = 0, rule: str = "best",
                    opens: datetime | None = None) -> int:
    opens = opens or datetime.now(timezone.utc) - timedelta(minutes=5)
    r = post_form(teacher, f"/courses/{cid}/assignments", title="Homework", problems=problems,
                  opens_at=utc_form(opens), deadline=utc_form(deadline),
                  late_until=utc_form(late_until) if late_until else "",
                  late_penalty=str(penalty), rule=rule)
    assert r.status_code == 303, r.text
    return int(r.headers["location"].rsplit("/", 1)[1])


def join(student: TestClient, code: str) -> None:
    r = post_form(student, "/courses/join", code=code)
    assert r.status_code == 303, r.text
