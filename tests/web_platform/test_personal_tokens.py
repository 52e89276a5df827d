"""Personal tokens and student's packages on the server (issue 29), through the forms and the
API a browser and `judge.py` use: a token made on the account page is shown once and kept as a
hash; a submission sent with it is the account's (its history, its assignment, its limits); a
revoked or unknown one is refused, never taken for a new visitor; packages are downloaded from
a problem's, an assignment's and a course's page, by those who may see them."""

from __future__ import annotations

import io
import json
import re
import zipfile
from datetime import datetime, timedelta, timezone

import pytest
from accounts_support import FORM, ORIGIN, join, make_assignment, make_course, post_form, signup
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from web.app import create_app
from web.store.accounts import ApiToken, Assignment
from web.store.assignment_book import student_view
from web.store.db import Submission, Visitor

from e2e.fake_grader import quick
from web_platform.test_api import ACCEPTED, TOKEN, make_settings, wait_done


@pytest.fixture
def app(tmp_path):
    app = create_app(make_settings(tmp_path, rate_limit_per_address=2), grader=quick, workers=1)
    with TestClient(app):
        yield app


def make_token(c: TestClient, name: str = "laptop") -> str:
    r = post_form(c, "/account/tokens", name=name)
    assert r.status_code == 201, r.text
    assert r.headers["cache-control"] == "no-store"
    return re.search(r'id="new-token">([^<]+)<', r.text).group(1)


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_a_token_is_shown_once_kept_as_a_hash_and_acts_as_the_account(app):
    assert TestClient(app).get("/account", follow_redirects=False).status_code == 303
    alice = signup(app, "alice", name="Alice")
    token = make_token(alice)
    assert token.startswith("kvp_") and len(token) > 40
    page = alice.get("/account").text
    assert "laptop" in page and token not in page  # shown once
    db = app.state.ctx.db
    with db.session() as s:
        stored = [r.token_hash for r in s.scalars(select(ApiToken))]
    assert len(stored) == 1 and token not in stored[0]
    api = TestClient(app)
    me = api.get("/api/me", headers=bearer(token)).json()
    assert me["account"] == "alice" and me["display_name"] == "Alice"
    r = api.post("/api/submissions", json={"problem": "901", "code": ACCEPTED},
                 headers=bearer(token))
    assert r.status_code == 202, r.text
    assert wait_done(api, r.json()["id"], headers=bearer(token))["verdict"] == "AC"
    # the signed-in page lists it: the same visitor, the account's
    mine = alice.get("/api/submissions", headers={"Origin": ORIGIN}).json()["submissions"]
    assert [m["id"] for m in mine] == [r.json()["id"]]
    assert "/account" in alice.get("/").text  # the header links the account page


def test_a_token_submission_counts_for_the_assignment_under_the_account_limits(app):
    teacher = signup(app, "prof", instructor_token=TOKEN)
    cid, code = make_course(teacher)
    aid = make_assignment(teacher, cid, "901", datetime.now(timezone.utc) + timedelta(hours=1))
    bob = signup(app, "bob")
    join(bob, code)
    token = make_token(bob)
    api = TestClient(app)
    # the address allows 2 anonymous submissions a window; the account's own cap is higher
    ids = [api.post("/api/submissions", json={"problem": "901", "code": ACCEPTED},
                    headers=bearer(token)).json()["id"] for _ in range(3)]
    for sid in ids:
        wait_done(api, sid, headers=bearer(token))
    db = app.state.ctx.db
    with db.session() as s:
        a = s.get(Assignment, aid)
        owners = set(s.scalars(select(Submission.visitor_id).where(Submission.id.in_(ids))))
    view = student_view(db, a, owners.pop())
    assert view["state"] == "solved" and view["cells"]["901"]["attempts"] == 3 and not owners
    anonymous = TestClient(app)
    codes = [anonymous.post("/api/submissions", json={"problem": "901", "code": ACCEPTED},
                            headers=bearer("my-own-client-token-1234")).status_code
             for _ in range(3)]
    assert codes[-1] == 429, codes


def test_revoked_and_unknown_tokens_are_refused_and_make_no_visitor(app):
    alice, eve = signup(app, "alice"), signup(app, "eve")
    token = make_token(alice)
    with app.state.ctx.db.session() as s:
        tid = s.scalar(select(ApiToken.id))
        visitors = s.scalar(select(func.count()).select_from(Visitor))
    assert post_form(eve, f"/account/tokens/{tid}/revoke").status_code == 303
    api = TestClient(app)
    assert api.get("/api/me", headers=bearer(token)).json()["account"] == "alice"  # not hers
    assert post_form(alice, f"/account/tokens/{tid}/revoke").status_code == 303
    for value in (token, "kvp_" + "x" * 43):
        r = api.post("/api/submissions", json={"problem": "901", "code": ACCEPTED},
                     headers=bearer(value))
        assert r.status_code == 401 and r.json()["error"]["code"] == "token_refused", r.text
    with app.state.ctx.db.session() as s:
        assert s.scalar(select(func.count()).select_from(Visitor)) == visitors
    # made only by a page of this server (the session cookie's CSRF guard)
    r = alice.post("/account/tokens", content=b"name=x",
                   headers={"Content-Type": FORM["Content-Type"]}, follow_redirects=False)
    assert r.status_code == 403
    for _ in range(10):
        make_token(alice)
    assert post_form(alice, "/account/tokens", name="one too many").status_code == 409


def _files(resp) -> dict[str, bytes]:
    assert resp.status_code == 200, resp.text[:500]
    assert resp.headers["content-type"] == "application/zip"
    z = zipfile.ZipFile(io.BytesIO(resp.content))
    return {n.split("/", 1)[1]: z.read(n) for n in z.namelist()}


def test_packages_download_from_the_problem_assignment_and_course_pages(app):
    anyone = TestClient(app)
    assert 'href="/problems/901/package.zip"' in anyone.get("/problems/901").text
    files = _files(anyone.get("/problems/901/package.zip"))
    manifest = json.loads(files["package.json"])
    assert manifest["server"] == "http://testserver" and manifest["scope"]["kind"] == "problem"
    assert "judge.py" in files and "problems/901-toy-lru/problem.json" in files
    assert not any("/hidden/" in f or "reference" in f for f in files)
    assert anyone.get("/problems/999/package.zip").status_code == 404
    teacher = signup(app, "prof", instructor_token=TOKEN)
    cid, code = make_course(teacher)
    later = datetime.now(timezone.utc) + timedelta(days=1)
    aid = make_assignment(teacher, cid, "901", later + timedelta(days=1), opens=later)
    stranger, student = signup(app, "stranger"), signup(app, "carol")
    join(student, code)
    assert stranger.get(f"/courses/{cid}/package.zip").status_code == 404
    # not open yet: the student has nothing to download, the staff have it
    assert student.get(f"/courses/{cid}/assignments/{aid}/package.zip").status_code == 404
    assert student.get(f"/courses/{cid}/package.zip").status_code == 409
    staff = _files(teacher.get(f"/courses/{cid}/assignments/{aid}/package.zip"))
    scope = json.loads(staff["package.json"])["scope"]
    assert scope == {"kind": "assignment", "title": "Homework", "course_id": cid,
                     "assignment_id": aid}
    assert 'id="package-link"' in teacher.get(f"/courses/{cid}/assignments/{aid}").text
