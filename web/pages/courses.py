"""Course pages: my courses, a course (students: assignments and their state; staff: members,
roster, assignments), an assignment (students: its problems; staff: its gradebook, CSV/JSON
export, regrade). Staff pages refuse students, and a non-member is told there is no course."""

from __future__ import annotations

from datetime import datetime

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from judge.messages import translate
from web import dates
from web.accounts import service as accounts
from web.accounts import sessions
from web.courses import service
from web.courses.service import STAFF, CourseError
from web.http import drafts
from web.http.lang import request_lang
from web.http.request_input import RowId
from web.http.throttle import client_address
from web.jobs import regrades
from web.pages.render import render, render_error_page
from web.store.accounts import INSTRUCTOR
from web.store.assignment_book import (
    assignment_book,
    book_csv,
    book_json,
    counted_submissions,
    student_view,
)
from web.store.db import Regrade, utcnow

router = APIRouter(include_in_schema=False)


def _who(request: Request):
    info = sessions.request_session(request)
    return (info.account if info else None), bool(info and info.is_staff)


def _role(request: Request, cid: int) -> str:
    account, staff = _who(request)
    return service.role_in(request.app.state.ctx.db, cid, account, staff)


def _failed(request: Request, exc: CourseError):
    return render_error_page(request, exc.status, translate(exc.message, request_lang(request)))


def _sign_in_first(request: Request):
    return RedirectResponse(f"/login?next={request.url.path}", status_code=303)


@router.get("/courses")
def courses_page(request: Request):
    account, staff = _who(request)
    if account is None and not staff:
        return _sign_in_first(request)
    ctx = request.app.state.ctx
    return render(request, "courses.html", courses=service.my_courses(ctx.db, account, staff),
                  invitations=service.invitations_for(ctx.db, account),
                  can_create=staff, error=request.query_params.get("error"))


@router.post("/courses")
async def create_course(request: Request):
    account, staff = _who(request)
    if not staff:
        return _failed(request, CourseError(403, "not_allowed", "Only instructors create courses."))
    form = await request.form()
    try:
        c = service.create_course(request.app.state.ctx.db, account, str(form.get("title", "")))
    except CourseError as exc:
        return _failed(request, exc)
    return RedirectResponse(f"/courses/{c.id}", status_code=303)


class _JoinGuard:
    """Wrong join codes are throttled per account and per address (as wrong passwords are):
    a code is short enough to type, so guessing must cost time, by the form or by the link."""

    def __init__(self, request: Request, account):
        limits = request.app.state.ctx.limits
        self.request = request
        self.pairs = ((limits.join_by_account, f"account:{account.id}"),
                      (limits.join_by_address, client_address(request)))

    def refusal(self):
        wait = max(limit.wait_s(key) for limit, key in self.pairs)
        if wait <= 0:
            return None
        retry = int(wait) + 1
        resp = render_error_page(self.request, 429, translate(
            "Too many wrong join codes: try again in {s} s.", request_lang(self.request), s=retry))
        resp.headers["Retry-After"] = str(retry)
        return resp

    def failed(self) -> None:
        for limit, key in self.pairs:
            limit.failed(key)

    def succeeded(self) -> None:
        limit, key = self.pairs[0]
        limit.succeeded(key)


@router.post("/courses/join")
async def join_course(request: Request):
    """Join by code (typed in any case, with or without spaces and dashes)."""
    account, _ = _who(request)
    if account is None:
        return _sign_in_first(request)
    ctx = request.app.state.ctx
    guard = _JoinGuard(request, account)
    if (refused := guard.refusal()) is not None:
        return refused
    form = await request.form()
    try:
        c = service.join(ctx.db, account, str(form.get("code", "")))
    except CourseError as exc:
        guard.failed()
        return _failed(request, exc)
    guard.succeeded()
    return RedirectResponse(f"/courses/{c.id}", status_code=303)


@router.get("/join/{code}")
def join_link(request: Request, code: str):
    """A course's join link: signed in, a page that asks (a GET changes nothing, so a link
    cannot enrol anyone who did not press Join); not yet, sign in or up first and come back.
    A wrong code here costs what a wrong typed one costs."""
    account, _ = _who(request)
    code = code[:service.MAX_CODE_TEXT]
    if account is None:
        return RedirectResponse(f"/login?next=/join/{service.normal_code(code)}",
                                status_code=303)
    ctx = request.app.state.ctx
    guard = _JoinGuard(request, account)
    if (refused := guard.refusal()) is not None:
        return refused
    course = service.course_by_code(ctx.db, code)
    if course is None:
        guard.failed()
        return _failed(request, CourseError(404, "bad_join_code", "No course has that join "
                                            "code."))
    if service.is_member(ctx.db, course.id, account):
        return RedirectResponse(f"/courses/{course.id}", status_code=303)
    return render(request, "join.html", course=course, code=course.join_code)


@router.post("/courses/{cid}/invitation")
async def answer_invitation(request: Request, cid: RowId):
    """The invited account's own answer: `answer=accept` joins, anything else declines."""
    account, _ = _who(request)
    if account is None:
        return _sign_in_first(request)
    form = await request.form()
    accept = str(form.get("answer", "")) == "accept"
    try:
        service.answer_invitation(request.app.state.ctx.db, cid, account, accept)
    except CourseError as exc:
        return _failed(request, exc)
    return RedirectResponse(f"/courses/{cid}" if accept else "/courses", status_code=303)


# What a course page says after a form (known codes only: the query never writes the page).
NOTICES = {"invited": "The invitation was sent: the account joins when it accepts.",
           "changed": "The role was changed.",
           "roster": "Roster read: {n} rows. Listed accounts are invited; each joins when it "
                     "accepts."}


def _notice(request: Request) -> str | None:
    code, _, n = (request.query_params.get("notice") or "").partition(":")
    if code not in NOTICES:
        return None
    values = {"n": int(n)} if code == "roster" and n.isdigit() else {}
    if code == "roster" and not values:
        return None
    return translate(NOTICES[code], request_lang(request), **values)


@router.get("/courses/{cid}")
def course_page(request: Request, cid: int):
    ctx = request.app.state.ctx
    try:
        role = _role(request, cid)
    except CourseError as exc:
        return _failed(request, exc)
    from web.store.accounts import Course
    with ctx.db.session() as s:
        course = s.get(Course, cid)
    account, staff = _who(request)
    items = service.assignments(ctx.db, cid)
    states = {}
    if account is not None and role not in STAFF:
        states = {a.id: student_view(ctx.db, a, account.visitor_id)["state"] for a in items}
    is_staff = role in STAFF
    return render(request, "course.html", course=course, role=role, assignments=items,
                  join_base=str(request.base_url).rstrip("/"),
                  states=states, now=utcnow(),
                  members=service.members(ctx.db, cid) if is_staff else [],
                  invited=service.pending_invitations(ctx.db, cid) if is_staff else [],
                  resettable=service.resettable(ctx.db, cid, account, staff)
                  if role == INSTRUCTOR else set(),
                  problems=[p for p in ctx.catalog.list() if drafts.published(ctx, p)],
                  notice=_notice(request))


async def _staff_action(request: Request, cid: int, fn, *roles):
    """Run `fn(role, form)` for a member with one of `roles`; back to the course page."""
    try:
        role = _role(request, cid)
        service.require(role, *roles)
        form = await request.form()
        out = await anyio.to_thread.run_sync(lambda: fn(role, form))
    except CourseError as exc:
        return _failed(request, exc)
    return out or RedirectResponse(f"/courses/{cid}", status_code=303)


@router.post("/courses/{cid}/roster")
async def upload_roster(request: Request, cid: int):
    ctx = request.app.state.ctx

    def load(role, form):
        upload = form.get("roster")
        text = str(form.get("roster_text") or "")
        if upload is not None and hasattr(upload, "file"):
            text = upload.file.read(1024 * 1024).decode("utf-8-sig", "replace")
        n = service.load_roster(ctx.db, cid, role, text)
        return RedirectResponse(f"/courses/{cid}?notice=roster:{n}", status_code=303)
    return await _staff_action(request, cid, load, INSTRUCTOR)


@router.post("/courses/{cid}/members")
async def add_member(request: Request, cid: int):
    """An existing account is invited (it joins when it accepts); a member's role changes."""
    ctx = request.app.state.ctx

    def add(role, form):
        done = service.add_member(ctx.db, cid, role, str(form.get("username", "")),
                                  str(form.get("role", "")) or "student")
        return RedirectResponse(f"/courses/{cid}?notice={done}", status_code=303)
    return await _staff_action(request, cid, add, *STAFF)


@router.post("/courses/{cid}/members/{aid}/role")
async def change_role(request: Request, cid: int, aid: int):
    ctx = request.app.state.ctx
    return await _staff_action(request, cid, lambda role, form: service.set_role(
        ctx.db, cid, role, aid, str(form.get("role", ""))), *STAFF)


@router.post("/courses/{cid}/members/{aid}/password")
async def reset_password(request: Request, cid: int, aid: int):
    """A new temporary password, shown once to the instructor (no e-mail server is assumed);
    the account's sessions are closed."""
    ctx = request.app.state.ctx

    account, staff = _who(request)

    def reset(role, form):
        # Only over accounts whose every course the actor teaches (never platform staff's).
        target = service.reset_target(ctx.db, cid, aid, account, staff)
        password = accounts.temporary_password()
        accounts.set_password(ctx.db, target.id, password, temporary=True)
        sessions.close_all(ctx.db, target.id)
        return render(request, "password_reset.html", target=target, password=password,
                      course_id=cid)
    return await _staff_action(request, cid, reset, INSTRUCTOR)


@router.post("/courses/{cid}/assignments")
async def create_assignment(request: Request, cid: int):
    ctx = request.app.state.ctx

    def create(role, form):
        refs = [r for r in str(form.get("problems", "")).replace(",", " ").split() if r]
        refs += [str(v) for v in form.getlist("problem")]
        a = service.create_assignment(ctx.db, ctx.catalog, cid, role,
                                      str(form.get("title", "")), refs, *_times(form),
                                      published=lambda p: drafts.published(ctx, p))
        return RedirectResponse(f"/courses/{cid}/assignments/{a.id}", status_code=303)
    return await _staff_action(request, cid, create, INSTRUCTOR)


MAX_TZ_OFFSET_MIN = 14 * 60  # the world's zones lie within UTC-12 .. UTC+14


def _times(form) -> tuple[datetime, datetime, datetime | None, float, str]:
    """(opens, deadline, late until, penalty, rule) from an assignment form. Its times are
    typed in the reader's zone: the page sends the zone's name in `tz` (pages.js; it decides
    summer time at each date) and its offset now in `tz_offset_min` (minutes east of UTC) for a
    name this server does not know; without script both are empty and the labels say UTC."""
    try:
        tz = int(str(form.get("tz_offset_min") or "0")[:8])
    except ValueError:
        tz = 0
    if abs(tz) > MAX_TZ_OFFSET_MIN:
        raise CourseError(422, "bad_time", service.BAD_TIME)
    zone = dates.zone(str(form.get("tz") or "")[:64])
    opens = service.parse_time(str(form.get("opens_at", "")), tz, zone) or utcnow()
    deadline = service.parse_time(str(form.get("deadline", "")), tz, zone)
    if deadline is None:
        raise CourseError(422, "bad_times", "An assignment needs a deadline.")
    late = service.parse_time(str(form.get("late_until", "")), tz, zone)
    try:
        penalty = float(str(form.get("late_penalty") or "0")) / 100.0
    except ValueError:
        raise CourseError(422, "bad_rule", "The penalty is 0-100 %.") from None
    return opens, deadline, late, penalty, str(form.get("rule") or "best")


@router.post("/courses/{cid}/assignments/{aid}/times")
async def edit_times(request: Request, cid: int, aid: int):
    ctx = request.app.state.ctx

    def edit(role, form):
        service.update_times(ctx.db, cid, aid, role, *_times(form))
        return RedirectResponse(f"/courses/{cid}/assignments/{aid}", status_code=303)
    return await _staff_action(request, cid, edit, INSTRUCTOR)


def _assignment(request: Request, cid: int, aid: int, *roles):
    role = _role(request, cid)
    if roles:
        service.require(role, *roles)
    return role, service.assignment(request.app.state.ctx.db, cid, aid)


@router.get("/courses/{cid}/assignments/{aid}")
def assignment_page(request: Request, cid: int, aid: int):
    ctx = request.app.state.ctx
    try:
        role, a = _assignment(request, cid, aid)
    except CourseError as exc:
        return _failed(request, exc)
    account, _ = _who(request)
    titles = {p.id: p for p in ctx.catalog.list()}
    now = utcnow()
    # The server's clock decides what is late, so the page says where it stands by that clock.
    phase = ("not open" if now < a.opens_at else "open" if now <= a.deadline else
             "late window" if a.late_until and now <= a.late_until else "closed")
    if role in STAFF:
        mine_rg = [rg for rg in regrades.listing(ctx.db, 20, course_id=cid)
                   if rg["problem"] in a.problem_ids]
        return render(request, "assignment.html", role=role, a=a, course_id=cid,
                      book=assignment_book(ctx.db, a), problems=titles, mine=None, phase=phase,
                      course_regrades=mine_rg, notice=_regrade_notice(request))
    mine = student_view(ctx.db, a, account.visitor_id)
    return render(request, "assignment.html", role=role, a=a, course_id=cid, book=None,
                  problems=titles, mine=mine, phase=phase)


def _regrade_notice(request: Request) -> str | None:
    """What "Regrade all" did (?regrades=N, a count only: the query never writes the page)."""
    n = request.query_params.get("regrades") or ""
    if not n.isdigit() or len(n) > 3:
        return None
    lang = request_lang(request)
    if n == "0":
        return translate("Nothing to regrade: no student of this course has a counted "
                         "submission of these problems yet.", lang)
    return translate("Regrades started: {n}. Each waits for your approval below.", lang,
                     n=int(n))


def _export(request: Request, cid: int, aid: int, kind: str) -> Response:
    ctx = request.app.state.ctx
    try:
        _, a = _assignment(request, cid, aid, *STAFF)
    except CourseError as exc:
        return _failed(request, exc)
    book = assignment_book(ctx.db, a)
    text, media = ((book_csv(book), "text/csv; charset=utf-8") if kind == "csv"
                   else (book_json(book), "application/json"))
    return Response(text, media_type=media, headers={
        "Content-Disposition": f'attachment; filename="assignment-{a.id}.{kind}"',
        "Cache-Control": "no-store"})


@router.get("/courses/{cid}/assignments/{aid}/gradebook.csv")
def assignment_csv(request: Request, cid: int, aid: int):
    return _export(request, cid, aid, "csv")


@router.get("/courses/{cid}/assignments/{aid}/gradebook.json")
def assignment_json(request: Request, cid: int, aid: int):
    return _export(request, cid, aid, "json")


@router.get("/courses/{cid}/assignments/{aid}/regrade")
def regrade_confirm(request: Request, cid: int, aid: int):
    """Regrading is destructive once approved: a page that says what it will do, first."""
    try:
        _, a = _assignment(request, cid, aid, INSTRUCTOR)
    except CourseError as exc:
        return _failed(request, exc)
    return render(request, "confirm.html", action=f"/courses/{cid}/assignments/{aid}/regrade",
                  back=f"/courses/{cid}/assignments/{aid}",
                  question="Regrade the submission each student of this course has counted for "
                  "{problems}? The new results stay hidden until approved on this assignment's "
                  "page.", values={"problems": ", ".join(a.problem_ids)})


@router.post("/courses/{cid}/assignments/{aid}/regrade")
def regrade_assignment(request: Request, cid: int, aid: int):
    """A regrade of this course: its students' counted submissions only, in the course's own
    pending slot (the platform's regrade of the same problem stays free)."""
    ctx = request.app.state.ctx
    try:
        _, a = _assignment(request, cid, aid, INSTRUCTOR)
    except CourseError as exc:
        return _failed(request, exc)
    started = 0
    for pid, ids in counted_submissions(ctx.db, a).items():
        if not ids:
            continue  # nothing counted yet: an empty regrade would only hold the slot
        try:
            regrades.start(ctx.db, pid, ctx.jobs.enqueue, course_id=cid, submission_ids=ids)
            started += 1
        except regrades.RegradeError:
            pass  # one pending already: the assignment page shows it
    return RedirectResponse(f"/courses/{cid}/assignments/{aid}?regrades={started}",
                            status_code=303)


@router.post("/courses/{cid}/regrades/{rid}/{action}")
async def decide_regrade(request: Request, cid: RowId, rid: RowId, action: str):
    """The course's instructors approve or discard the course's own regrades, no other."""
    ctx = request.app.state.ctx
    try:
        service.require(_role(request, cid), INSTRUCTOR)
    except CourseError as exc:
        return _failed(request, exc)
    with ctx.db.session() as s:
        rg = s.get(Regrade, rid)
        theirs = rg is not None and rg.course_id == cid
    if not theirs or action not in ("approve", "discard"):
        return _failed(request, CourseError(404, "regrade_not_found",
                                            "There is no such regrade in this course."))
    fn = regrades.approve if action == "approve" else regrades.discard
    try:
        await anyio.to_thread.run_sync(fn, ctx.db, rid)
    except regrades.RegradeError:
        pass  # decided meanwhile, or still grading: the page shows its state
    aid = str((await request.form()).get("assignment", ""))
    return RedirectResponse(f"/courses/{cid}/assignments/{aid}" if aid.isdigit()
                            else f"/courses/{cid}", status_code=303)
