"""Issue 28 item 1, as the attack: the instructor of one course ("mallory", an ordinary account
with the instructor role in course A only) tries to reach beyond it. She adds accounts that never
asked, resets their passwords and signs in as them (a student of course B only; the platform's
staff), renames an account platform-wide through a roster, and takes the platform's one pending
regrade slot with a "Regrade all" that also regrades outsiders. A course's roles reach only that
course: each step below must be refused, or confined to course A."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from accounts_support import FORM, ORIGIN, join, make_assignment, make_course, post_form, signup
from fastapi.testclient import TestClient
from sqlalchemy import select

from web.app import create_app
from web.store.accounts import Account, Membership
from web.store.db import Regrade, RegradeItem, Submission

from e2e.fake_grader import quick
from web_platform.test_api import ACCEPTED, TOKEN, make_settings, wait_done

PASSWORD = "correct horse battery"
JSON = {"Origin": ORIGIN}


@pytest.fixture
def app(tmp_path):
    app = create_app(make_settings(tmp_path), grader=quick, workers=1)
    with TestClient(app):
        yield app


def _ids(app) -> dict[str, int]:
    with app.state.ctx.db.session() as s:
        return {a.username: a.id for a in s.scalars(select(Account))}


def _courses_of(app, username: str) -> set[int]:
    with app.state.ctx.db.session() as s:
        return set(s.scalars(select(Membership.course_id).join(
            Account, Account.id == Membership.account_id).where(Account.username == username)))


def _submit(c: TestClient, code: str = ACCEPTED) -> int:
    r = c.post("/api/submissions", json={"problem": "901", "code": code}, headers=JSON)
    assert r.status_code == 202, r.text
    wait_done(c, r.json()["id"])
    return r.json()["id"]


@pytest.fixture
def world(app):
    """Platform staff ("boss", signed up with the instructor token) makes courses A and B;
    mallory joins A by its code and boss makes her A's instructor; bob joins B only."""
    boss = signup(app, "boss", name="Boss", instructor_token=TOKEN)
    a, code_a = make_course(boss, "Course A")
    b, code_b = make_course(boss, "Course B")
    mallory = signup(app, "mallory", name="Mallory")
    join(mallory, code_a)
    ids = _ids(app)
    assert post_form(boss, f"/courses/{a}/members/{ids['mallory']}/role",
                     role="instructor").status_code == 303
    bob = signup(app, "bob", name="Bob")
    join(bob, code_b)
    return {"app": app, "boss": boss, "mallory": mallory, "bob": bob, "a": a, "b": b,
            "code_a": code_a, "code_b": code_b, "ids": _ids(app)}


def _accept(c: TestClient, cid: int, answer: str = "accept"):
    return post_form(c, f"/courses/{cid}/invitation", answer=answer)


def test_adding_an_existing_account_is_an_invitation_it_must_accept(world):
    app, mallory, bob, a = world["app"], world["mallory"], world["bob"], world["a"]
    r = post_form(mallory, f"/courses/{a}/members", username="bob", role="student")
    assert r.status_code == 303, r.text
    # Before: bob was a member of A at once. Now he is asked, and nothing changes until he says so.
    assert a not in _courses_of(app, "bob")
    assert 'data-username="bob"' not in mallory.get(f"/courses/{a}").text.split(
        'id="members"')[1].split("</table>")[0]
    assert 'id="invitations"' in mallory.get(f"/courses/{a}").text  # shown as pending
    mine = bob.get("/courses")
    assert "Course A" in mine.text and f'action="/courses/{a}/invitation"' in mine.text
    assert "邀请" in bob.get("/courses?lang=zh").text
    # Another account cannot answer bob's invitation for him.
    assert _accept(world["boss"], a).status_code == 404
    assert a not in _courses_of(app, "bob")
    assert _accept(bob, a, "decline").status_code == 303
    assert a not in _courses_of(app, "bob")
    assert _accept(bob, a).status_code == 404  # declined: nothing left to accept
    post_form(mallory, f"/courses/{a}/members", username="bob", role="assistant")
    assert _accept(bob, a).status_code == 303
    assert a in _courses_of(app, "bob")
    with app.state.ctx.db.session() as s:
        assert s.scalar(select(Membership.role).where(
            Membership.course_id == a, Membership.account_id == world["ids"]["bob"])) == \
            "assistant"


def test_a_course_instructor_cannot_reset_a_password_beyond_her_course(world):
    app, mallory, bob, a, b = (world[k] for k in ("app", "mallory", "bob", "a", "b"))
    ids = world["ids"]
    # bob really is in A too (he accepted, or joined by A's code), and still in B
    join(bob, world["code_a"])
    assert {a, b} <= _courses_of(app, "bob")
    r = post_form(mallory, f"/courses/{a}/members/{ids['bob']}/password")
    # Before: 200 and a temporary password; mallory then signed in as bob and read course B.
    assert r.status_code == 403, r.text
    assert 'id="temporary-password"' not in r.text
    assert "Bob" in bob.get("/").text  # his session was not closed
    assert post_form(TestClient(app), "/login", username="bob",
                     password=PASSWORD).status_code == 303  # his password still works
    zh = mallory.post(f"/courses/{a}/members/{ids['bob']}/password?lang=zh", content=b"",
                      headers=FORM, follow_redirects=False)
    assert zh.status_code == 403 and "重置" in zh.text
    # the course page does not offer what would be refused
    page = mallory.get(f"/courses/{a}").text
    assert f'action="/courses/{a}/members/{ids["bob"]}/password"' not in page


def test_a_course_instructor_cannot_reset_the_platform_staffs_password(world):
    app, mallory, boss, a = world["app"], world["mallory"], world["boss"], world["a"]
    staff = signup(app, "root", name="Root", instructor_token=TOKEN)
    join(staff, world["code_a"])  # a staff account that is a student of A, and of nothing else
    assert _courses_of(app, "root") == {a}
    r = post_form(mallory, f"/courses/{a}/members/{_ids(app)['root']}/password")
    # Before: 200; with the temporary password mallory signed in as staff and created courses.
    assert r.status_code == 403 and 'id="temporary-password"' not in r.text
    assert post_form(TestClient(app), "/login", username="root",
                     password=PASSWORD).status_code == 303
    # boss (all courses' staff) keeps the right to reset a student's password
    join(signup(app, "carol", name="Carol"), world["code_a"])
    ok = post_form(boss, f"/courses/{a}/members/{_ids(app)['carol']}/password")
    assert ok.status_code == 200 and 'id="temporary-password"' in ok.text


def test_a_roster_never_enrols_or_renames_an_existing_account(world):
    app, mallory, bob, a, b = (world[k] for k in ("app", "mallory", "bob", "a", "b"))
    r = mallory.post(f"/courses/{a}/roster", files={"roster": (
        "roster.csv", b"student_id,name\nbob,Carol Admin\nnewkid,New Kid\n", "text/csv")},
        headers={"Origin": ORIGIN}, follow_redirects=False)
    assert r.status_code == 303, r.text
    # Before: bob was in A at once, renamed "Carol Admin" everywhere (B's staff saw it).
    assert a not in _courses_of(app, "bob")
    with app.state.ctx.db.session() as s:
        assert s.scalar(select(Account.display_name).where(Account.username == "bob")) == "Bob"
    in_b = world["boss"].get(f"/courses/{b}").text
    assert "Carol Admin" not in in_b and "Bob" in in_b
    # signing in again does not do it either (it used to enrol and rename at every sign-in)
    again = TestClient(app)
    assert post_form(again, "/login", username="bob", password=PASSWORD).status_code == 303
    assert a not in _courses_of(app, "bob")
    with app.state.ctx.db.session() as s:
        assert s.scalar(select(Account.display_name).where(Account.username == "bob")) == "Bob"
    # an existing account is invited instead, and so is one made later with a listed name
    assert f'action="/courses/{a}/invitation"' in bob.get("/courses").text
    newkid = signup(app, "newkid", name="Nicky")
    assert _courses_of(app, "newkid") == set()
    assert _accept(newkid, a).status_code == 303 and _courses_of(app, "newkid") == {a}
    # the roster's name is the course's word for the student, shown in the course only
    assert "New Kid" in mallory.get(f"/courses/{a}").text
    with app.state.ctx.db.session() as s:
        assert s.scalar(select(Account.display_name).where(Account.username == "newkid")) == \
            "Nicky"


def test_a_course_regrade_covers_its_students_only_and_leaves_the_platform_slot_free(world):
    app, mallory, a = world["app"], world["mallory"], world["a"]
    student = signup(app, "s1", name="S1")
    join(student, world["code_a"])
    aid = make_assignment(mallory, a, "901", datetime.now(timezone.utc) + timedelta(hours=1))
    mine = _submit(student)
    outsider = TestClient(app)  # anonymous, in no course
    theirs = _submit(outsider)
    r = post_form(mallory, f"/courses/{a}/assignments/{aid}/regrade")
    assert r.status_code == 303
    with app.state.ctx.db.session() as s:
        (rg,) = s.scalars(select(Regrade)).all()
        covered = set(s.scalars(select(RegradeItem.submission_id)
                                .where(RegradeItem.regrade_id == rg.id)))
        rid = rg.id
    # Before: the outsider's submission was regraded too.
    assert covered == {mine}, (covered, theirs)
    # Before: 409 regrade_pending until someone discarded the course's regrade.
    hdr = {"X-Instructor-Token": TOKEN}
    r = TestClient(app).post("/api/instructor/regrades", json={"problem": "901"}, headers=hdr)
    assert r.status_code == 202, r.text
    with app.state.ctx.db.session() as s:
        platform = s.get(Regrade, r.json()["id"])
        items = set(s.scalars(select(RegradeItem.submission_id)
                              .where(RegradeItem.regrade_id == platform.id)))
    assert {mine, theirs} <= items  # the platform's own regrade still covers everyone
    # mallory's course regrade is hers to decide; the platform's is not
    assert post_form(mallory, f"/courses/{a}/regrades/{platform.id}/discard").status_code == 404
    assert post_form(mallory, f"/courses/{a}/regrades/{rid}/discard").status_code == 303
    with app.state.ctx.db.session() as s:
        assert (s.get(Regrade, rid).status, s.get(Regrade, platform.id).status) == \
            ("discarded", "pending")
        assert s.get(Submission, theirs).kind == "live"


def test_a_course_regrade_is_approved_on_the_assignment_page(world):
    app, mallory, a = world["app"], world["mallory"], world["a"]
    student = signup(app, "s2", name="S2")
    join(student, world["code_a"])
    aid = make_assignment(mallory, a, "901", datetime.now(timezone.utc) + timedelta(hours=1))
    _submit(student)
    post_form(mallory, f"/courses/{a}/assignments/{aid}/regrade")
    with app.state.ctx.db.session() as s:
        rid = s.scalar(select(Regrade.id))
    for _ in range(200):
        page = mallory.get(f"/courses/{a}/assignments/{aid}").text
        if f'action="/courses/{a}/regrades/{rid}/approve"' in page:
            break
        import time
        time.sleep(0.05)
    assert re.search(rf'data-regrade="{rid}"', page), page
    assert post_form(mallory, f"/courses/{a}/regrades/{rid}/approve").status_code == 303
    with app.state.ctx.db.session() as s:
        assert s.get(Regrade, rid).status == "approved"
    # a student of the course cannot decide one
    assert post_form(student, f"/courses/{a}/regrades/{rid}/discard").status_code == 403
