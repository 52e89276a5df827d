"""Course pages: my courses, a course (students: assignments and their state; staff: members,
roster, assignments), an assignment (students: its problems; staff: its gradebook, CSV/JSON
export, regrade). Staff pages refuse students, and a non-member is told there is no course."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from judge.messages import translate
from web.accounts import service as accounts
from web.accounts import sessions
from web.api.lang import request_lang
from web.courses import service
from web.courses.service import STAFF, CourseError
from web.jobs import regrades
from web.pages.routes import render, render_error_page
from web.store.accounts import INSTRUCTOR
from web.store.assignment_book import assignment_book, book_csv, book_json, student_view
from web.store.db import utcnow

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


@router.post("/courses/join")
async def join_course(request: Request):
    account, _ = _who(request)
    if account is None:
        return _sign_in_first(request)
    form = await request.form()
    try:
        c = service.join(request.app.state.ctx.db, account, str(form.get("code", "")))
    except CourseError as exc:
        return _failed(request, exc)
    return RedirectResponse(f"/courses/{c.id}", status_code=303)


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
    account, _ = _who(request)
    items = service.assignments(ctx.db, cid)
    states = {}
    if account is not None and role not in STAFF:
        states = {a.id: student_view(ctx.db, a, account.visitor_id)["state"] for a in items}
    return render(request, "course.html", course=course, role=role, assignments=items,
                  states=states, now=utcnow(),
                  members=service.members(ctx.db, cid) if role in STAFF else [],
                  problems=ctx.catalog.list(), notice=request.query_params.get("notice"))


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
    ctx = request.app.state.ctx
    return await _staff_action(request, cid, lambda role, form: service.add_member(
        ctx.db, cid, role, str(form.get("username", "")), str(form.get("role", ""))), *STAFF)


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

    def reset(role, form):
        target = service.member_account(ctx.db, cid, aid)
        password = accounts.temporary_password()
        accounts.set_password(ctx.db, target.id, password)
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
                                      str(form.get("title", "")), refs, *_times(form))
        return RedirectResponse(f"/courses/{cid}/assignments/{a.id}", status_code=303)
    return await _staff_action(request, cid, create, INSTRUCTOR)


MAX_TZ_OFFSET_MIN = 14 * 60  # the world's zones lie within UTC-12 .. UTC+14


def _times(form) -> tuple:
    """(opens, deadline, late until, penalty, rule) from an assignment form. The browser
    writes its own zone's offset in `tz_offset_min` (minutes east of UTC) for the
    datetime-local inputs, which carry no zone; without script it stays 0 and the page says UTC."""
    try:
        tz = int(str(form.get("tz_offset_min") or "0"))
    except ValueError:
        tz = 0
    if abs(tz) > MAX_TZ_OFFSET_MIN:
        raise CourseError(422, "bad_time", "A time is written 2025-03-14T23:59 (ISO 8601).")
    opens = service.parse_time(str(form.get("opens_at", "")), tz) or utcnow()
    deadline = service.parse_time(str(form.get("deadline", "")), tz)
    if deadline is None:
        raise CourseError(422, "bad_times", "An assignment needs a deadline.")
    late = service.parse_time(str(form.get("late_until", "")), tz)
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
        return render(request, "assignment.html", role=role, a=a, course_id=cid,
                      book=assignment_book(ctx.db, a), problems=titles, mine=None, phase=phase)
    mine = student_view(ctx.db, a, account.visitor_id)
    return render(request, "assignment.html", role=role, a=a, course_id=cid, book=None,
                  problems=titles, mine=mine, phase=phase)


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
                  question="Regrade every student's latest submission of {problems}? The new "
                  "results stay hidden until approved on the instructor page.",
                  values={"problems": ", ".join(a.problem_ids)})


@router.post("/courses/{cid}/assignments/{aid}/regrade")
def regrade_assignment(request: Request, cid: int, aid: int):
    ctx = request.app.state.ctx
    try:
        _, a = _assignment(request, cid, aid, INSTRUCTOR)
    except CourseError as exc:
        return _failed(request, exc)
    started = 0
    for pid in a.problem_ids:
        try:
            regrades.start(ctx.db, pid, ctx.jobs.enqueue)
            started += 1
        except regrades.RegradeError:
            pass  # one pending already: the instructor page shows it
    return RedirectResponse(f"/courses/{cid}/assignments/{aid}?regrades={started}",
                            status_code=303)


def course_staff_sees(db, viewer, visitor_id: int) -> bool:
    """Whether `viewer` is instructor or assistant of a course `visitor_id`'s account is a
    student of (so may read that student's submissions)."""
    if viewer is None:
        return False
    from sqlalchemy import select
    from sqlalchemy.orm import aliased

    from web.store.accounts import STUDENT, Account, Membership
    mine, theirs = aliased(Membership), aliased(Membership)
    with db.session() as s:
        return s.scalar(
            select(theirs.id).join(Account, Account.id == theirs.account_id)
            .join(mine, mine.course_id == theirs.course_id)
            .where(Account.visitor_id == visitor_id, theirs.role == STUDENT,
                   mine.account_id == viewer.id, mine.role.in_(STAFF)).limit(1)) is not None
