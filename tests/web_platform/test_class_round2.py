"""Issue 30, round 2 of a course run on the platform: what a class meets in its first week. Each
test is one numbered item of the issue, through the HTTP forms and API a browser uses."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from accounts_support import ORIGIN, join, make_assignment, make_course, post_form, signup
from fastapi.testclient import TestClient

from web.app import create_app

from e2e.fake_grader import quick
from web_platform.test_api import ACCEPTED, TOKEN, make_settings, wait_done

JSON = {"Origin": ORIGIN}


@pytest.fixture
def app(tmp_path):
    app = create_app(make_settings(tmp_path), grader=quick, workers=1)
    with TestClient(app):
        yield app


@pytest.fixture
def course(app):
    """An instructor (platform staff by the sign-up token), a course, a student in it."""
    prof = signup(app, "prof", name="Prof", instructor_token=TOKEN)
    cid, code = make_course(prof, "KV lab")
    ann = signup(app, "ann", name="Ann")
    join(ann, code)
    return {"app": app, "prof": prof, "ann": ann, "cid": cid, "code": code}


def _submit(c: TestClient, code: str = ACCEPTED, problem: str = "901") -> int:
    r = c.post("/api/submissions", json={"problem": problem, "code": code}, headers=JSON)
    assert r.status_code == 202, r.text
    wait_done(c, r.json()["id"])
    return r.json()["id"]


# ---- item 1: problem titles on the assignment page -----------------------------------------

@pytest.mark.parametrize("lang, title", [("en", "Toy LRU store"), ("zh", "玩具 LRU 存储")])
def test_the_assignment_page_names_each_problem_by_its_title(course, lang, title):
    soon = datetime.now(timezone.utc) + timedelta(hours=1)
    aid = make_assignment(course["prof"], course["cid"], "901", soon)
    page = course["ann"].get(f"/courses/{course['cid']}/assignments/{aid}?lang={lang}").text
    # Before: "901 <bound method Problem.title of <Problem 901-toy-lru>>" in both languages.
    assert "bound method" not in page and "&lt;Problem" not in page
    assert f"901 {title}" in page


# ---- item 2: the problem page knows the assignment -----------------------------------------

def _due_items(page: str) -> str:
    assert 'id="due"' in page, "no due line beside Submit"
    return page.split('id="due"', 1)[1].split("</div>", 1)[0]


def test_the_problem_page_says_when_it_is_due_and_what_a_late_submission_counts(course):
    app, prof, ann, cid = course["app"], course["prof"], course["ann"], course["cid"]
    now = datetime.now(timezone.utc)
    open_id = make_assignment(prof, cid, "901", now + timedelta(hours=2))
    # Before: the problem page said nothing of either assignment.
    line = _due_items(ann.get("/problems/901?lang=en").text)
    deadline = (now + timedelta(hours=2)).replace(microsecond=0, tzinfo=None).isoformat()
    assert f'data-assignment="{open_id}" data-phase="open"' in line
    assert f'<time datetime="{deadline}+00:00">' in line
    # An anonymous visitor and the course's instructor are in no assignment: no line.
    assert 'id="due"' not in TestClient(app).get("/problems/901").text
    assert 'id="due"' not in prof.get("/problems/901").text


def test_after_the_deadline_the_page_and_the_verdict_say_late_counts_80_percent(course):
    prof, ann, cid = course["prof"], course["ann"], course["cid"]
    now = datetime.now(timezone.utc)
    aid = make_assignment(prof, cid, "901", now - timedelta(minutes=1),
                          late_until=now + timedelta(hours=1), penalty=20,
                          opens=now - timedelta(hours=1))
    for lang, note in (("en", "late: counts 80 %"), ("zh", "迟交：按 80 % 计分")):
        line = _due_items(ann.get(f"/problems/901?lang={lang}").text)
        assert f'data-assignment="{aid}" data-phase="late window"' in line
        shown = line.split('class="late-note"', 1)[1].split(">", 1)
        assert "hidden" not in shown[0] and shown[1].startswith(note), shown
    sid = _submit(ann)
    # Before: the verdict was "Accepted · score 100%" and nothing said it counts 80 %.
    body = ann.get(f"/api/submissions/{sid}").json()
    assert [(a["assignment"], a["phase"], a["counts"]) for a in body["assignments"]] == \
        [(aid, "late window", 0.8)]
    assert "late: counts 80 %" in ann.get(f"/submissions/{sid}?lang=en").text


# ---- item 3: `judge new` makes a draft ------------------------------------------------------

@pytest.fixture
def bank(tmp_path):
    """The fixture bank (901) and a fresh `judge new` scaffold (902), whose reference raises
    NotImplementedError."""
    import shutil

    from judge.authoring.scaffold import new_problem

    from e2e.fake_grader import PROBLEMS, REFERENCE
    root = tmp_path / "bank" / "problems"
    shutil.copytree(PROBLEMS / "901-toy-lru", root / "901-toy-lru")
    shutil.copytree(REFERENCE, tmp_path / "bank" / "reference")
    new_problem("902", "running-sum", root)
    return root


@pytest.fixture
def draft_app(tmp_path, bank):
    from web.settings import Settings
    settings = Settings(data_dir=tmp_path / "data", problems_dir=bank,
                        reference_dir=bank.parent / "reference", instructor_token=TOKEN,
                        reaper_interval_s=0.2, sse_poll_s=0.05)
    app = create_app(settings, grader=quick, workers=1)
    with TestClient(app):
        yield app


def _sees_902(c: TestClient) -> dict:
    return {"list": "/problems/902" in c.get("/").text,
            "api list": "902" in {p["id"] for p in c.get("/api/problems").json()["problems"]},
            "page": c.get("/problems/902").status_code,
            "api": c.get("/api/problems/902").status_code,
            "submit": c.post("/api/submissions", json={"problem": "902", "code": "x = 1\n"},
                             headers=JSON).status_code}


def test_a_new_problem_is_a_draft_seen_by_staff_only_until_published(draft_app):
    anyone, boss = TestClient(draft_app), signup(draft_app, "boss", instructor_token=TOKEN)
    # Before: the scaffold was on the public list and took submissions (graded IE).
    assert _sees_902(anyone) == {"list": False, "api list": False, "page": 404, "api": 404,
                                 "submit": 404}
    assert _sees_902(boss) == {"list": True, "api list": True, "page": 200, "api": 200,
                               "submit": 202}
    assert 'id="draft-banner"' in boss.get("/problems/902").text
    assert 'data-problem="902" data-draft' in boss.get("/instructor").text
    # a course may not set it as homework while it is a draft
    cid, _ = make_course(boss)
    r = post_form(boss, f"/courses/{cid}/assignments", title="HW", problems="902",
                  deadline="2030-01-01T00:00", late_penalty="0", rule="best")
    assert r.status_code == 409, r.text
    # someone who is not staff cannot publish it
    assert post_form(anyone, "/instructor/publish/902").status_code == 303
    assert anyone.get("/problems/902").status_code == 404
    assert post_form(boss, "/instructor/publish/902").status_code == 303
    assert _sees_902(anyone)["page"] == 200 and _sees_902(anyone)["list"]
    assert 'id="draft-banner"' not in boss.get("/problems/902").text


def test_a_draft_that_passes_judge_check_is_published(draft_app, bank):
    from types import SimpleNamespace

    from judge.authoring import proof
    anyone = TestClient(draft_app)
    p = draft_app.state.ctx.catalog.get("902")
    version = p.version
    failed = SimpleNamespace(ok=False, errors=["reference raises"], warnings=[], table=lambda: [])
    proof.record(p, failed, 1.0, by="judge check")
    assert anyone.get("/problems/902").status_code == 404  # a failing check proves nothing
    passed = SimpleNamespace(ok=True, errors=[], warnings=[], table=lambda: [])
    proof.record(p, passed, 2.0, by="judge check")
    assert anyone.get("/problems/902").status_code == 200
    assert draft_app.state.ctx.catalog.get("902").version == version  # a record, not an input


# ---- item 4: one unambiguous date form, the reader's zone named -----------------------------

def test_times_are_written_one_way_in_the_readers_zone_and_read_back(course):
    from datetime import datetime as dt

    from web.store.accounts import Assignment
    app, prof, cid = course["app"], course["prof"], course["cid"]
    prof.cookies.set("kvp_tz", "Asia/Shanghai")  # what pages.js keeps for a browser there
    r = post_form(prof, f"/courses/{cid}/assignments", title="HW", problems="901",
                  opens_at="1 Jan 2020 08:00", deadline="2 Dec 2030 03:36", late_until="",
                  late_penalty="0", rule="best", tz="Asia/Shanghai")
    assert r.status_code == 303, r.text
    aid = int(r.headers["location"].rsplit("/", 1)[1])
    with app.state.ctx.db.session() as s:
        assert s.get(Assignment, aid).deadline == dt(2030, 12, 1, 19, 36)
    page = prof.get(f"/courses/{cid}/assignments/{aid}?lang=en").text
    # Before: "2030-12-01 19:36:00 UTC" in the heading, the form's datetime-local in the
    # browser's locale order (12/02/2030 in en-US).
    assert '<time datetime="2030-12-01T19:36:00Z">2 Dec 2030 03:36 (GMT+8)</time>' in page
    assert 'value="2 Dec 2030 03:36"' in page and "Asia/Shanghai, GMT+8" in page
    assert 'type="datetime-local"' not in page
    zh = prof.get(f"/courses/{cid}/assignments/{aid}?lang=zh").text
    assert "2030年12月2日 03:36 (GMT+8)" in zh and 'value="2030年12月2日 03:36"' in zh
    # the form's own text goes back unchanged; zh text and ISO are read too
    for text in ("2 Dec 2030 03:36", "2030年12月2日 03:36", "2030-12-02T03:36"):
        r = post_form(prof, f"/courses/{cid}/assignments/{aid}/times", opens_at="1 Jan 2020 08:00",
                      deadline=text, late_until="", late_penalty="0", rule="best",
                      tz="Asia/Shanghai")
        assert r.status_code == 303, (text, r.text)
        with app.state.ctx.db.session() as s:
            assert s.get(Assignment, aid).deadline == dt(2030, 12, 1, 19, 36), text
    # summer time is the zone's at each date, not the offset of the day the form was sent
    for text, utc in (("1 Jul 2030 12:00", dt(2030, 7, 1, 16)), ("1 Dec 2030 12:00",
                                                                   dt(2030, 12, 1, 17))):
        post_form(prof, f"/courses/{cid}/assignments/{aid}/times", opens_at="1 Jan 2020 08:00",
                  deadline=text, late_penalty="0", rule="best", tz="America/New_York",
                  tz_offset_min="-300")
        with app.state.ctx.db.session() as s:
            assert s.get(Assignment, aid).deadline == utc, text
    # an unknown zone or a bad time: UTC, and a 422 naming the form
    prof.cookies.set("kvp_tz", "../../etc/passwd")
    assert "(UTC)" in prof.get(f"/courses/{cid}/assignments/{aid}").text
    bad = post_form(prof, f"/courses/{cid}/assignments/{aid}/times", deadline="12/02/2030 03:36",
                    tz="Asia/Shanghai")
    assert bad.status_code == 422 and "2026-12-02T23:59" in bad.text


# ---- item 5: join codes -----------------------------------------------------------------------

def test_join_codes_are_short_case_free_without_look_alikes_and_have_a_link(course):
    import re

    from sqlalchemy import select

    from web.store.accounts import Account, Course, Membership
    app, prof = course["app"], course["prof"]
    codes = [make_course(prof, f"Lab {i}")[1] for i in range(12)] + [course["code"]]
    # Before: 8 characters of token_urlsafe: '-', '_', l/I, O/0, and case mattered.
    assert all(re.fullmatch(r"[A-HJKMNP-Z2-9]{6}", c) for c in codes), codes
    cid, code = make_course(prof, "Phone lab")
    bea = signup(app, "bea")
    typed = f"{code[:3].lower()}-{code[3:].lower()} "
    assert post_form(bea, "/courses/join", code=typed).headers["location"] == f"/courses/{cid}"
    # the link: signed out, sign in first and come back; signed in, a page that asks
    link = f"/join/{code}"
    assert link in prof.get(f"/courses/{cid}").text
    anon = TestClient(app).get(link.lower(), follow_redirects=False)
    assert anon.status_code == 303 and anon.headers["location"] == f"/login?next={link}"
    assert f'href="/signup?next=/join/{code}"' in TestClient(app).get(
        f"/login?next={link}").text
    cai = signup(app, "cai")
    page = cai.get(link.lower())
    assert page.status_code == 200 and "Phone lab" in page.text
    assert 'id="join-link-form"' in page.text
    with app.state.ctx.db.session() as s:  # asked, not joined: a GET changes nothing
        cai_id = s.scalar(select(Account.id).where(Account.username == "cai"))
        assert s.scalar(select(Membership.id).where(Membership.account_id == cai_id)) is None
    assert post_form(cai, "/courses/join", code=code).status_code == 303
    assert cai.get(link, follow_redirects=False).headers["location"] == f"/courses/{cid}"
    # a course made before (a case-sensitive code) is still joined by its code as it was
    with app.state.ctx.db.session() as s:
        s.get(Course, cid).join_code = "aB-_x9Zq"
        s.commit()
    assert post_form(signup(app, "dan"), "/courses/join", code="aB-_x9Zq").status_code == 303
    # wrong codes through the link cost what typed ones cost
    eve = signup(app, "eve")
    answers = [eve.get("/join/ZZZZZZ").status_code for _ in range(12)]
    assert answers[0] == 404 and answers[-1] == 429, answers


# ---- item 6: the account page: password, display name, tokens; a forced change after a reset --

PASSWORD = "correct horse battery"


def _sign_in(app, username: str, password: str) -> TestClient:
    c = TestClient(app)
    r = post_form(c, "/login", username=username, password=password)
    assert r.status_code == 303, r.text
    return c


def test_the_account_page_changes_the_password_and_the_display_name(course):
    from sqlalchemy import select

    from web.store.accounts import Account
    from web.store.db import Visitor
    app, ann = course["app"], course["ann"]
    page = ann.get("/account").text
    # Before: the page held personal tokens only; no way to change a password or a name.
    assert all(f'id="{f}"' in page for f in ("password-form", "name-form", "token-form"))
    assert post_form(ann, "/account/name", display_name="Ann Lee").status_code == 303
    with app.state.ctx.db.session() as s:
        a = s.scalar(select(Account).where(Account.username == "ann"))
        assert (a.display_name, s.get(Visitor, a.visitor_id).display_name) == ("Ann Lee",) * 2
    laptop = _sign_in(app, "ann", PASSWORD)  # another session of hers
    change = dict(current_password=PASSWORD, new_password="a new long secret",
                  confirm_password="a new long secret")
    assert post_form(ann, "/account/password", **{**change, "current_password": "nope"}) \
        .status_code == 401
    assert post_form(ann, "/account/password", **{**change, "confirm_password": "other one!"}) \
        .status_code == 422
    r = post_form(ann, "/account/password", **change)
    assert r.status_code == 303 and r.headers["location"] == "/account?notice=password"
    assert 'id="settings-notice"' in ann.get("/account?notice=password").text  # still signed in
    assert laptop.get("/account", follow_redirects=False).status_code == 303  # signed out
    assert post_form(TestClient(app), "/login", username="ann", password=PASSWORD) \
        .status_code == 401
    _sign_in(app, "ann", "a new long secret")
    # guessing through this form costs what guessing at sign-in costs
    codes = [post_form(ann, "/account/password", **{**change, "current_password": f"x{i}"})
             .status_code for i in range(8)]
    assert codes[0] == 401 and codes[-1] == 429, codes


def test_after_a_reset_the_temporary_password_must_be_changed_first(course):
    import re

    from sqlalchemy import select

    from web.store.accounts import Account
    app, prof, cid = course["app"], course["prof"], course["cid"]
    with app.state.ctx.db.session() as s:
        ann_id = s.scalar(select(Account.id).where(Account.username == "ann"))
    r = post_form(prof, f"/courses/{cid}/members/{ann_id}/password")
    temp = re.search(r'id="temporary-password"[^>]*>([^<]+)<', r.text).group(1).strip()
    ann = _sign_in(app, "ann", temp)
    # Before: the temporary password was hers for good; nothing asked her to change it.
    for path in ("/courses", "/", f"/courses/{cid}"):
        r = ann.get(path, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/account#password", path
    assert 'id="must-change"' in ann.get("/account").text
    assert post_form(ann, "/account/password", current_password=temp,
                     new_password="her own secret", confirm_password="her own secret") \
        .status_code == 303
    assert ann.get("/courses").status_code == 200 and 'id="must-change"' not in \
        ann.get("/account").text


# ---- item 7: how to become an instructor ------------------------------------------------------

def test_every_staff_session_has_courses_and_the_readme_says_how_to_teach(app):
    from web.settings import REPO_ROOT
    token_only = TestClient(app)
    r = post_form(token_only, "/instructor/login", token=TOKEN)
    assert r.status_code == 303
    # Before: the token's session had no Courses link (the way in was the sign-up form only).
    nav = token_only.get("/instructor").text.split("<nav>", 1)[1].split("</nav>", 1)[0]
    assert 'href="/courses"' in nav
    assert token_only.get("/courses").status_code == 200
    assert 'id="teach-hint"' in TestClient(app).get("/instructor").text
    readme = (REPO_ROOT / "README.md").read_text()
    teach = readme.split("## Teaching a course", 1)[1].split("\n## ", 1)[0]
    for step in ("Instructor token", "/signup", "join code", "/join/CODE", "roster",
                 "late window", "Regrade all", "judge import", "judge new", "Publish"):
        assert step in teach, step


# ---- item 8: one number per student per assignment everywhere, its unit named ---------------

def test_every_gradebook_gives_one_number_per_student_per_assignment(draft_app):
    import csv
    import io
    import re
    app = draft_app
    prof = signup(app, "prof", instructor_token=TOKEN)
    post_form(prof, "/instructor/publish/902")
    cid, code = make_course(prof)
    ann = signup(app, "ann", name="Ann")
    join(ann, code)
    now = datetime.now(timezone.utc)
    aid = make_assignment(prof, cid, "901 902", now - timedelta(minutes=1),
                          late_until=now + timedelta(hours=1), penalty=20,
                          opens=now - timedelta(hours=1))
    _submit(ann)  # 901 late: AC counts 80 %; 902 never tried: 0
    base = f"/courses/{cid}/assignments/{aid}"
    page = prof.get(base + "?lang=en").text
    row = page.split('data-username="ann"', 1)[1].split("</tr>", 1)[0]
    assert 'data-total-percent="40.0"' in row and "40 %" in row
    rows = list(csv.DictReader(io.StringIO(prof.get(base + "/gradebook.csv").text)))
    book = prof.get(base + "/gradebook.json").json()
    # Before: the CSV's total was 40.0 (a percentage) and the JSON's 0.8 (a sum of fractions);
    # /instructor showed the late AC as 100 % and no assignment total at all.
    assert rows[0]["total %"] == "40.0"
    st = book["students"][0]
    assert st["total_percent"] == 40.0 and "total" not in st
    assert st["cells"]["901"]["score_percent"] == 80.0
    assert st["cells"]["901"]["score_at_deadline_percent"] is None
    assert book["assignment"]["late_penalty_percent"] == 20.0
    instructor = prof.get("/instructor?lang=en").text
    grades = instructor.split('id="assignment-grades"', 1)[1].split('id="gradebook"', 1)[0]
    assert re.search(r'data-username="ann">.*data-total-percent="40.0">40 %', grades)
    assert "no deadlines" in instructor.split('id="gradebook"', 1)[1][:200]


# ---- item 9: "Regrade all" regrades what is counted, and never nothing ----------------------

def test_regrades_cover_the_counted_submission_and_are_never_empty(draft_app):
    from sqlalchemy import select

    from web.store.db import Regrade, RegradeItem
    app = draft_app
    prof = signup(app, "prof", instructor_token=TOKEN)
    post_form(prof, "/instructor/publish/902")
    cid, code = make_course(prof)
    ann = signup(app, "ann", name="Ann")
    join(ann, code)
    aid = make_assignment(prof, cid, "901", datetime.now(timezone.utc) + timedelta(hours=1))
    right = _submit(ann)
    latest_wrong = _submit(ann, ACCEPTED + "\n# BUG\n")  # the gradebook keeps the AC

    def items(rid: int) -> set[int]:
        with app.state.ctx.db.session() as s:
            return set(s.scalars(select(RegradeItem.submission_id)
                                 .where(RegradeItem.regrade_id == rid)))
    assert post_form(prof, f"/courses/{cid}/assignments/{aid}/regrade").status_code == 303
    with app.state.ctx.db.session() as s:
        course_rg = s.scalar(select(Regrade.id).where(Regrade.course_id == cid))
    assert items(course_rg) == {right}
    hdr = {"X-Instructor-Token": TOKEN}
    r = TestClient(app).post("/api/instructor/regrades", json={"problem": "901"}, headers=hdr)
    assert r.status_code == 202, r.text
    # Before: the platform's regrade took each student's latest submission (the WA).
    assert items(r.json()["id"]) == {right} and latest_wrong not in items(r.json()["id"])
    # Before: a problem nobody has submitted made a "0/0 graded" regrade waiting for approval.
    empty = make_assignment(prof, cid, "902", datetime.now(timezone.utc) + timedelta(hours=1))
    r = post_form(prof, f"/courses/{cid}/assignments/{empty}/regrade")
    assert r.headers["location"].endswith("?regrades=0")
    assert 'id="assignment-notice"' in prof.get(r.headers["location"]).text
    r = TestClient(app).post("/api/instructor/regrades", json={"problem": "902"}, headers=hdr)
    assert r.status_code == 409 and r.json()["error"]["code"] == "nothing_to_regrade"
    with app.state.ctx.db.session() as s:
        assert not list(s.scalars(select(Regrade).where(Regrade.problem_id == "902")))


# ---- item 10: `judge check` from the command line shows on /instructor ------------------------

def test_a_command_line_judge_check_shows_on_the_instructor_page(tmp_path):
    import shutil
    import subprocess
    import sys

    from judge.authoring.proof import PROOF_NAME
    from web.settings import REPO_ROOT, Settings

    from e2e.fake_grader import PROBLEMS, REFERENCE
    root = tmp_path / "bank" / "problems"
    # without a check another test (or an instructor page) left beside the fixture
    shutil.copytree(PROBLEMS / "901-toy-lru", root / "901-toy-lru",
                    ignore=shutil.ignore_patterns(PROOF_NAME))
    shutil.copytree(REFERENCE, tmp_path / "bank" / "reference")
    settings = Settings(data_dir=tmp_path / "data", problems_dir=root,
                        reference_dir=tmp_path / "bank" / "reference", instructor_token=TOKEN)
    app = create_app(settings, grader=quick, workers=0)
    with TestClient(app) as c:
        hdr = {"X-Instructor-Token": TOKEN}

        def row() -> str:
            page = c.get("/instructor?lang=en", headers=hdr).text
            return page.split('<tr data-problem="901"', 1)[1].split("</tr>", 1)[0]
        assert "never run" in row()
        done = subprocess.run([sys.executable, "-m", "judge", "check", str(root / "901-toy-lru")],
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        # Before: "never run" right after the command line said OK.
        shown = row()
        assert "never run" not in shown and ">pass<" in shown, shown
        assert 'data-check-by="judge check"' in shown and "from the command line" in shown


# ---- item 16: small things ------------------------------------------------------------------

def test_one_attempt_an_empty_gradebook_and_no_reset_of_ones_own_password(course):
    from sqlalchemy import select

    from web.store.accounts import Account
    app, prof, ann, cid = course["app"], course["prof"], course["ann"], course["cid"]
    aid = make_assignment(prof, cid, "901", datetime.now(timezone.utc) + timedelta(hours=1))
    empty_cid, _ = make_course(prof, "Nobody here")
    empty = make_assignment(prof, empty_cid, "901", datetime.now(timezone.utc) + timedelta(hours=1))
    # Before: an empty gradebook was a header with no row at all.
    assert "No students yet." in prof.get(f"/courses/{empty_cid}/assignments/{empty}?lang=en").text
    _submit(ann)
    page = prof.get(f"/courses/{cid}/assignments/{aid}?lang=en").text
    assert "1 attempt<" in page and "1 attempts" not in page  # was "1 attempts"
    with app.state.ctx.db.session() as s:
        me = s.scalar(select(Account.id).where(Account.username == "prof"))
    # Before: the instructor was offered "Reset password" on themselves.
    course_page = prof.get(f"/courses/{cid}").text
    assert f'action="/courses/{cid}/members/{me}/password"' not in course_page
    assert post_form(prof, f"/courses/{cid}/members/{me}/password").status_code == 409


# ---- item 15: no English left on the Chinese pages ------------------------------------------

@pytest.fixture
def imported_app(tmp_path):
    """The handbook's own format imported (as `judge import` does), with 901 beside it."""
    import re
    import shutil
    from pathlib import Path

    from judge.cli.main import main as judge_main
    from web.settings import Settings

    from e2e.fake_grader import PROBLEMS, REFERENCE
    book = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_more"
    root = tmp_path / "bank" / "problems"
    shutil.copytree(PROBLEMS / "901-toy-lru", root / "901-toy-lru")
    shutil.copytree(REFERENCE, tmp_path / "bank" / "reference")
    assert judge_main(["import", str(book), "--problems", str(root), "--no-check"]) == 0
    # the handbook's chapters of its Python book are paths of its pages
    toml = root / "900-row-norms" / "problem.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(re.sub(r'(?m)^chapter = .*$', 'chapter = "python/asyncio.md"', text),
                    encoding="utf-8")
    settings = Settings(data_dir=tmp_path / "data", problems_dir=root,
                        reference_dir=tmp_path / "bank" / "reference", instructor_token=TOKEN)
    app = create_app(settings, grader=quick, workers=1)
    with TestClient(app):
        yield app


def test_the_chinese_pages_say_it_in_chinese(imported_app):
    import re

    from web.pages.problem_list import tag_key
    c = TestClient(imported_app)
    # Before: /problems was a 404 page.
    r = c.get("/problems?lang=zh", follow_redirects=False)
    assert r.status_code == 308 and r.headers["location"] == "/?lang=zh"
    p = imported_app.state.ctx.catalog.get("900")
    assert p.source and "/" in p.chapter, (p.source, p.chapter)
    page = c.get("/problems/900?lang=zh").text
    source = page.split('class="note source"', 1)[1].split("</footer>", 1)[0]
    # Before: "the LLM-inference handbook's practice problems, by the handbook's authors" and
    # the changes in English; the chapter as its path (numeric/....md).
    assert "handbook" not in source and "test.py split" not in source, source
    assert p.chapter not in page and ".md<" not in page
    home = c.get("/?lang=zh").text
    assert p.chapter not in home
    shown = re.findall(r'<option value="([^"]*)"', home.split('name="tag"', 1)[1].split("</select>")[0])
    assert len(shown) == len(set(shown)) and all(t == tag_key(t) for t in shown if t), shown
    assert tag_key("KV cache") == tag_key("kv-cache") == tag_key("KV-Cache") == "kv-cache"
    staff = TestClient(imported_app)
    post_form(staff, "/instructor/login", token=TOKEN)
    zh = staff.get("/instructor?lang=zh").text
    workers = zh.split('id="workers"', 1)[1].split("</table>", 1)[0]
    assert ">idle<" not in workers and "空闲" in workers, workers  # was "idle"


# ---- item 14: imported problems in the page ---------------------------------------------------

@pytest.fixture
def asyncio_app(tmp_path):
    """The handbook's asyncio problem (gather-some) imported, and 901 with math and a worked
    explanation."""
    import shutil
    from pathlib import Path

    from judge.cli.main import main as judge_main
    from web.settings import Settings

    from e2e.fake_grader import PROBLEMS, REFERENCE
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    root = tmp_path / "bank" / "problems"
    shutil.copytree(PROBLEMS / "901-toy-lru", root / "901-toy-lru")
    shutil.copytree(REFERENCE, tmp_path / "bank" / "reference")
    st = root / "901-toy-lru" / "statement.en.md"
    st.write_text(st.read_text() + "\nA lookup costs $O(1)$, at most $k_i * 2$ steps; $5 stays.\n")
    (root / "901-toy-lru" / "explanation.en.md").write_text("Keep a dict: $O(1)$ each.\n")
    book = fixtures / "handbook_graded" / "book" / "gather-some"
    assert judge_main(["import", str(book), "--problems", str(root), "--no-check"]) == 0
    settings = Settings(data_dir=tmp_path / "data", problems_dir=root,
                        reference_dir=tmp_path / "bank" / "reference", instructor_token=TOKEN)
    app = create_app(settings, grader=quick, workers=1)
    with TestClient(app):
        yield app


def _config(page: str) -> dict:
    import json
    return json.loads(page.split('<script type="application/json" id="config">', 1)[1]
                      .split("</script>", 1)[0])


def test_an_asyncio_problem_runs_on_the_server_and_math_and_the_explanation_come(asyncio_app):
    c = TestClient(asyncio_app)
    pid = next(p.id for p in asyncio_app.state.ctx.catalog.list() if p.slug == "gather-some")
    assert asyncio_app.state.ctx.catalog.get(pid).browser  # the importer says the page can
    config = _config(c.get(f"/problems/{pid}").text)
    # Before: Run ran it in the page, where asyncio fails ("WebAssembly stack switching not
    # supported", even the reference's), and the server refused a practice run (409).
    assert config["browser"] is False and config["server_run_why"] == "event loop"
    r = c.post("/api/practice-runs", json={"problem": pid, "code": "x = 1\n"}, headers=JSON)
    assert r.status_code != 409, r.text
    page = c.get("/problems/901?lang=en").text
    # Before: "$O(1)$" as raw text inside the paragraph, and "k_i * 2" open to emphasis.
    assert '<span class="math" data-display="0">O(1)</span>' in page
    assert '<span class="math" data-display="0">k_i * 2</span>' in page and "$5 stays" in page
    assert _config(page)["math_js"].startswith("/static/dist/math.js")
    assert c.get("/problems/901/explanation").status_code == 403  # not before an AC
    _submit(c)
    got = c.get("/problems/901/explanation").json()["explanations"]
    assert '<span class="math" data-display="0">O(1)</span>' in got["en"]
