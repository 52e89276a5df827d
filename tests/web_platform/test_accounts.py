"""Accounts, courses and assignments through the forms a browser posts (TestClient): sessions,
CSRF, brute force, roles and who may see what, the per-assignment gradebook and its exports,
limits per account, and the migrations on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import logging
import re
from datetime import datetime, timedelta, timezone

import pytest
from accounts_support import (
    FORM,
    ORIGIN,
    join,
    make_assignment,
    make_course,
    post_form,
    signup,
)
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from web.app import create_app
from web.store.accounts import Account, AuthSession
from web.store.db import Submission

from e2e.fake_grader import quick
from web_platform.test_api import ACCEPTED, TOKEN, make_settings, wait_done

PASSWORD = "correct horse battery"
JSON = {"Origin": ORIGIN}


@pytest.fixture
def app(tmp_path):
    app = create_app(make_settings(tmp_path), grader=quick, workers=1)
    with TestClient(app):
        yield app


def submit(c, code=ACCEPTED, problem="901"):
    return c.post("/api/submissions", json={"problem": problem, "code": code}, headers=JSON)


def test_the_session_cookie_is_opaque_httponly_samesite_and_logout_kills_it(app):
    c = TestClient(app)
    r = post_form(c, "/signup", username="alice", password=PASSWORD, display_name="Alice")
    assert r.status_code == 303
    cookie = r.headers["set-cookie"]
    assert cookie.startswith("kvp_session=") and "HttpOnly" in cookie
    assert "samesite=lax" in cookie.lower() and "alice" not in cookie and PASSWORD not in cookie
    value = c.cookies.get("kvp_session")
    assert "Alice" in c.get("/").text and 'action="/logout"' in c.get("/").text
    assert post_form(c, "/logout").status_code == 303
    # the server forgot it: the same cookie sent again is nobody
    other = TestClient(app)
    other.cookies.set("kvp_session", value)
    assert 'href="/login"' in other.get("/").text
    with app.state.ctx.db.session() as s:
        assert s.scalars(select(AuthSession)).all() == []


def test_https_cookie_has_the_host_prefix(tmp_path):
    app = create_app(make_settings(tmp_path, cookie_secure=True), grader=quick)
    c = TestClient(app, base_url="https://testserver")
    r = c.post("/signup", content=b"username=bob&password=correct+horse+battery",
               headers={**FORM, "Origin": "https://testserver"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    cookie = r.headers["set-cookie"]
    assert cookie.startswith("__Host-kvp_session=") and "Secure" in cookie and "Path=/" in cookie
    assert "Domain" not in cookie


def test_the_instructor_cookie_is_a_session_not_the_token(app):
    c = TestClient(app)
    r = post_form(c, "/instructor/login", token=TOKEN)
    assert r.status_code == 303 and TOKEN not in r.headers["set-cookie"]
    assert "Gradebook" in c.get("/instructor").text
    # the old kind of cookie (the token itself) opens nothing any more
    old = TestClient(app)
    old.cookies.set("kvp_instructor", TOKEN)
    assert "Gradebook" not in old.get("/instructor").text
    assert post_form(c, "/logout").status_code == 303
    assert "Gradebook" not in c.get("/instructor").text


def test_session_fixation_is_refused(app):
    signup(app, "carol")
    c = TestClient(app)
    # a session id planted by an attacker (made up, or the attacker's own earlier session)
    planted = TestClient(app)
    post_form(planted, "/login", username="carol", password=PASSWORD)
    attacker_value = planted.cookies.get("kvp_session")
    c.cookies.set("kvp_session", "made-up-session-id.signature")
    assert 'href="/login"' in c.get("/").text  # a made-up id is nobody
    c.cookies.set("kvp_session", attacker_value)
    r = post_form(c, "/login", username="carol", password=PASSWORD)
    assert r.status_code == 303
    fresh = re.search(r"kvp_session=([^;]+)", r.headers["set-cookie"]).group(1)
    assert fresh != attacker_value
    planted_only = TestClient(app)
    planted_only.cookies.set("kvp_session", attacker_value)
    assert 'href="/login"' in planted_only.get("/").text  # the pre-login id was closed


def test_csrf_forms_from_another_origin_are_refused(app):
    c = signup(app, "dave")
    for path in ("/logout", "/courses/join", "/login"):
        r = c.post(path, content=b"code=x", headers={**FORM, "Origin": "http://evil.example"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "cross_origin"
        # and with no Origin nor Referer at all (a signed-in cookie must show where it is from)
        r = c.post(path, content=b"code=x",
                   headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert r.status_code == 403
    assert "dave" in c.get("/").text  # still signed in: the forged logout did nothing


def test_login_brute_force_is_refused_and_the_password_still_works_later(app):
    signup(app, "erin")
    throttle = app.state.ctx.limits.login_by_account
    now = [5000.0]
    throttle.clock = lambda: now[0]
    c = TestClient(app)
    for i in range(throttle.free):
        assert post_form(c, "/login", username="erin", password=f"wrong-{i}").status_code == 401
    r = post_form(c, "/login", username="erin", password=PASSWORD)
    assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1  # even the right one waits
    zh = c.post("/login?lang=zh", content=b"username=erin&password=x", headers=FORM)
    assert zh.status_code == 429 and "密码错误次数过多" in zh.text
    now[0] += 120
    assert post_form(c, "/login", username="erin", password=PASSWORD).status_code == 303


def test_signing_in_adopts_the_browsers_anonymous_history(app):
    c = TestClient(app)
    sid = submit(c).json()["id"]
    wait_done(c, sid)
    post_form(c, "/signup", username="frank", password=PASSWORD)
    mine = c.get("/api/submissions").json()["submissions"]
    assert [s["id"] for s in mine] == [sid]
    # signed out, the browser is a fresh anonymous visitor with nothing of the account's
    post_form(c, "/logout")
    assert c.get("/api/submissions").json()["submissions"] == []
    # the account has it from any browser
    other = TestClient(app)
    post_form(other, "/login", username="frank", password=PASSWORD)
    assert [s["id"] for s in other.get("/api/submissions").json()["submissions"]] == [sid]


def _course_with(app, assistants=(), students=("s1", "s2")):
    teacher = signup(app, "teacher", instructor_token=TOKEN)
    cid, code = make_course(teacher)
    clients = {"teacher": teacher}
    for name in list(assistants) + list(students):
        clients[name] = signup(app, name, name=name.upper())
        join(clients[name], code)
    with app.state.ctx.db.session() as s:
        ids = {a.username: a.id for a in s.scalars(select(Account))}
    for name in assistants:
        assert post_form(teacher, f"/courses/{cid}/members/{ids[name]}/role",
                         role="assistant").status_code == 303
    return cid, code, clients, ids


def test_students_reach_neither_other_courses_nor_others_code_nor_instructor_pages(app):
    cid, _, c, ids = _course_with(app)
    other_teacher = TestClient(app)
    post_form(other_teacher, "/instructor/login", token=TOKEN)
    other_cid = int(post_form(other_teacher, "/courses", title="Other").headers["location"]
                    .rsplit("/", 1)[1])
    aid = make_assignment(c["teacher"], cid, "901", datetime.now(timezone.utc) + timedelta(hours=1))
    s1, s2 = c["s1"], c["s2"]
    sid = submit(s1).json()["id"]
    wait_done(s1, sid)
    assert s2.get(f"/api/submissions/{sid}").status_code == 404
    assert s2.get(f"/submissions/{sid}").status_code == 404
    assert s1.get(f"/courses/{other_cid}").status_code == 404
    assert s1.get(f"/courses/{cid}").status_code == 200
    for path in (f"/courses/{cid}/assignments/{aid}/gradebook.csv",
                 f"/courses/{cid}/assignments/{aid}/gradebook.json",
                 f"/courses/{cid}/assignments/{aid}/regrade"):
        assert s1.get(path).status_code == 403, path
    assert post_form(s1, f"/courses/{cid}/members/{ids['s2']}/password").status_code == 403
    assert "Gradebook" not in s1.get("/instructor").text
    assert s1.get("/api/instructor/overview").status_code in (401, 403)
    assert 'href="/instructor"' not in s1.get("/").text
    assert 'href="/instructor"' in c["teacher"].get("/").text
    # the course's instructor sees the student's submission, named
    page = c["teacher"].get(f"/submissions/{sid}")
    assert page.status_code == 200 and "S1" in page.text


def test_an_assistant_cannot_change_roles_or_reset_passwords(app):
    cid, _, c, ids = _course_with(app, assistants=("ta",))
    ta = c["ta"]
    assert ta.get(f"/courses/{cid}").status_code == 200
    assert 'href="/instructor"' in ta.get("/").text
    r = post_form(ta, f"/courses/{cid}/members/{ids['s1']}/role", role="instructor")
    assert r.status_code == 403
    r = post_form(ta, f"/courses/{cid}/members/{ids['ta']}/role", role="instructor")
    assert r.status_code == 403
    assert post_form(ta, f"/courses/{cid}/members/{ids['s1']}/password").status_code == 403
    from web.store.accounts import Membership
    with app.state.ctx.db.session() as s:
        roles = {a: r for a, r in s.execute(select(Membership.account_id, Membership.role))}
    assert roles[ids["s1"]] == "student" and roles[ids["ta"]] == "assistant"


def test_password_reset_by_the_instructor_closes_sessions(app):
    cid, _, c, ids = _course_with(app)
    r = post_form(c["teacher"], f"/courses/{cid}/members/{ids['s1']}/password")
    assert r.status_code == 200
    temp = re.search(r'id="temporary-password">([^<]+)<', r.text).group(1)
    assert 'href="/login"' in c["s1"].get("/").text  # signed out everywhere
    fresh = TestClient(app)
    assert post_form(fresh, "/login", username="s1", password=PASSWORD).status_code == 401
    assert post_form(fresh, "/login", username="s1", password=temp).status_code == 303


def _stamp(app, sid, when: datetime):
    with app.state.ctx.db.session() as s:
        s.execute(update(Submission).where(Submission.id == sid)
                  .values(created_at=when.astimezone(timezone.utc).replace(tzinfo=None)))
        s.commit()


def test_the_assignment_gradebook_scores_at_the_deadline_with_late_flags(app):
    cid, _, c, ids = _course_with(app, students=("s1", "s2", "s3"))
    now = datetime.now(timezone.utc)
    deadline = now - timedelta(hours=1)
    aid = make_assignment(c["teacher"], cid, "901", deadline, late_until=now + timedelta(hours=1),
                          penalty=50, opens=now - timedelta(days=1))
    runs = {}
    for who, code, when in (("s1", ACCEPTED, deadline - timedelta(minutes=5)),   # AC on time
                            ("s2", ACCEPTED + "\n# BUG", deadline - timedelta(minutes=9)),
                            ("s2", ACCEPTED, deadline + timedelta(minutes=5)),   # AC late
                            ("s3", ACCEPTED + "\n# BUG", deadline - timedelta(minutes=2))):
        sid = submit(c[who], code).json()["id"]
        wait_done(c[who], sid)
        _stamp(app, sid, when)
        runs.setdefault(who, []).append(sid)
    book = c["teacher"].get(f"/courses/{cid}/assignments/{aid}/gradebook.json").json()
    cells = {st["username"]: st["cells"]["901"] for st in book["students"]}
    # the JSON's numbers name their unit (issue 30 item 8): percent of the problem's points
    assert cells["s1"] == {"state": "solved", "score_at_deadline_percent": 100.0,
                           "score_percent": 100.0, "submission": runs["s1"][0], "verdict": "AC",
                           "attempts": 1, "late": False,
                           "submitted_at": cells["s1"]["submitted_at"]}
    assert cells["s2"]["score_at_deadline_percent"] == 0.0
    assert cells["s2"]["score_percent"] == 50.0
    assert cells["s2"]["late"] is True and cells["s2"]["state"] == "late"
    assert cells["s2"]["submission"] == runs["s2"][1] and cells["s2"]["attempts"] == 2
    assert cells["s3"]["state"] == "tried" and cells["s3"]["score_percent"] == 0.0
    when = datetime.fromisoformat(cells["s1"]["submitted_at"])
    assert when.utcoffset() == timedelta(0)
    assert abs(when - (deadline - timedelta(minutes=5))) < timedelta(seconds=1)
    text = c["teacher"].get(f"/courses/{cid}/assignments/{aid}/gradebook.csv").text
    rows = {r[0]: r for r in csv.reader(io.StringIO(text))}
    head = rows["student_id"]
    s2 = dict(zip(head, rows["s2"]))
    assert s2["901 late"] == "late" and s2["901 score at deadline %"] == "0.0"
    assert s2["901 score %"] == "50.0" and s2["901 submitted at"].endswith("+00:00")
    # the students' own view of the state
    assert 'data-state="solved"' in c["s1"].get(f"/courses/{cid}/assignments/{aid}").text
    assert 'data-state="late"' in c["s2"].get(f"/courses/{cid}/assignments/{aid}").text
    assert 'data-state="tried"' in c["s3"].get(f"/courses/{cid}").text


def test_exports_are_formula_safe_and_never_hold_passwords(app, caplog):
    caplog.set_level(logging.DEBUG)
    evil = "a;=cmd|' /C calc'!A0;=1+1;"
    cid, _, c, ids = _course_with(app, students=())
    student = signup(app, "mallory", name=evil, password="hunter2-secret-pw")
    post_form(c["teacher"], f"/courses/{cid}/members", username="mallory", role="student")
    # adding an existing account invites it (issue 28): it is in the course once it accepts
    assert post_form(student, f"/courses/{cid}/invitation", answer="accept").status_code == 303
    aid = make_assignment(c["teacher"], cid, "901", datetime.now(timezone.utc) + timedelta(hours=1))
    wait_done(student, submit(student).json()["id"])
    text = c["teacher"].get(f"/courses/{cid}/assignments/{aid}/gradebook.csv").text
    # every text cell quoted, each ;-part that would start a formula made text
    assert "\"a;'=cmd|' /C calc'!A0;'=1+1;\"" in text
    row = next(r for r in csv.reader(io.StringIO(text)) if r[0] == "mallory")
    assert all(not part.startswith(("=", "+", "-", "@")) for cell in row
               for part in cell.replace(",", ";").split(";"))
    js = c["teacher"].get(f"/courses/{cid}/assignments/{aid}/gradebook.json").text
    legacy = TestClient(app)
    post_form(legacy, "/instructor/login", token=TOKEN)
    whole = legacy.get("/api/instructor/gradebook.csv").text
    assert "\"a;'=cmd|' /C calc'!A0;'=1+1;\"" in whole
    logs = "\n".join(r.getMessage() for r in caplog.records)
    for leak in ("hunter2-secret-pw", PASSWORD, "$argon2"):
        assert leak not in text and leak not in js and leak not in whole and leak not in logs
    with app.state.ctx.db.session() as s:
        stored = s.scalar(select(Account.password_hash).where(Account.username == "mallory"))
    assert stored.startswith("$argon2id$") and "hunter2" not in stored


def test_signed_in_students_behind_one_address_are_limited_per_account(tmp_path):
    app = create_app(make_settings(tmp_path, max_queued_per_address=2, rate_limit_per_address=2),
                     grader=quick, workers=0)  # nothing graded: everything stays queued
    with TestClient(app):
        students = [signup(app, f"kid{i}") for i in range(5)]
        codes = [submit(s).status_code for s in students]
        assert codes == [202] * 5  # 5 from one address, over the address caps of 2
        r = [submit(students[0]).status_code for _ in range(3)]
        assert r == [202, 202, 429]  # the account's own cap: 3 queued at once
        anon = TestClient(app)
        anon.cookies.set("kvp_lang", "zh")
        refusals = [submit(anon) for _ in range(3)]
        assert [x.status_code for x in refusals][-1] == 429
        msg = refusals[-1].json()["error"]["message"]
        assert "请" in msg, msg  # worded in the page's language


def test_migrations_stamp_a_pre_alembic_database_and_run_on_postgresql(tmp_path, pg_url):
    from sqlalchemy import create_engine, inspect

    from web.store.db import Base, Database
    from web.store.migrate import LEGACY_TABLES, current_revision, head_revision
    old = create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    Base.metadata.create_all(old, tables=[Base.metadata.tables[t] for t in LEGACY_TABLES])
    with old.begin() as conn:
        conn.exec_driver_sql("INSERT INTO visitors (token_hash, created_at, last_seen_at) "
                             "VALUES ('h', '2024-01-01', '2024-01-01')")
    db = Database(f"sqlite:///{tmp_path / 'old.db'}")
    db.create_all()
    assert current_revision(db.engine) == head_revision() == "0007"
    assert inspect(db.engine).has_table("accounts")
    with db.engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM visitors").scalar() == 1
    pg = Database(pg_url)
    pg.create_all()
    pg.create_all()  # again: nothing to do
    assert current_revision(pg.engine) == "0007"
    assert {"accounts", "auth_sessions", "courses", "assignments"} <= set(
        inspect(pg.engine).get_table_names())
    pg.engine.dispose()
