"""Downloads of a student's package (judge/handout): a problem's (anyone who may see the
problem page), an assignment's and a course's (its members; a student gets the problems of the
assignments that have opened). The package names this server, so its `judge.py submit` sends
here; what a package holds and leaves out is decided by judge.handout.build, never here.

Packages are kept in memory per (problems and their versions, scope, server): a class that
downloads at once costs one build.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from fastapi import APIRouter, Request
from fastapi.responses import Response

from judge.handout.build import PackageError, Scope, build_package
from judge.messages import translate
from web.accounts import sessions
from web.courses import service
from web.courses.service import STAFF, CourseError
from web.http import drafts
from web.http.lang import request_lang
from web.http.request_input import RowId
from web.pages.render import render_error_page
from web.store.accounts import Course
from web.store.db import utcnow

router = APIRouter(include_in_schema=False)
KEEP = 32  # packages kept in memory
_kept: OrderedDict = OrderedDict()
_lock = threading.Lock()


def _zip(problems: list, scope: Scope, server: str) -> tuple[str, bytes]:
    key = (tuple((p.id, p.version) for p in problems), tuple(scope.__dict__.items()), server)
    with _lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
    pkg = build_package(problems, scope, server)
    made = (pkg.top, pkg.zip_bytes())
    with _lock:
        _kept[key] = made
        while len(_kept) > KEEP:
            _kept.popitem(last=False)
    return made


def _send(request: Request, problems: list, scope: Scope):
    server = str(request.base_url).rstrip("/")
    try:
        top, data = _zip(problems, scope, server)
    except PackageError as exc:
        return render_error_page(request, 409, str(exc))
    return Response(data, media_type="application/zip", headers={
        "Content-Disposition": f'attachment; filename="{top}.zip"',
        "Cache-Control": "private, no-store"})


@router.get("/problems/{ref}/package.zip")
def problem_package(request: Request, ref: str):
    p = drafts.find(request, ref[:100])  # a draft is platform staff's only
    if p is None:
        return render_error_page(request, 404, translate("There is no such problem.",
                                                         request_lang(request)))
    return _send(request, [p], Scope("problem", f"{p.id}. {p.title(request_lang(request))}"))


def _member(request: Request, cid: int) -> str:
    info = sessions.request_session(request)
    return service.role_in(request.app.state.ctx.db, cid, info.account if info else None,
                           bool(info and info.is_staff))


def _problems(request: Request, ids: list[str]) -> list:
    catalog, out = request.app.state.ctx.catalog, []
    for pid in ids:
        p = catalog.get(pid)
        if p is not None and p not in out:
            out.append(p)
    return out


@router.get("/courses/{cid}/assignments/{aid}/package.zip")
def assignment_package(request: Request, cid: RowId, aid: RowId):
    try:
        role = _member(request, cid)
        a = service.assignment(request.app.state.ctx.db, cid, aid)
        if role not in STAFF and utcnow() < a.opens_at:
            raise CourseError(404, "assignment_not_found", "There is no such assignment.")
    except CourseError as exc:
        return render_error_page(request, exc.status, translate(exc.message,
                                                                request_lang(request)))
    return _send(request, _problems(request, a.problem_ids),
                 Scope("assignment", a.title, course_id=cid, assignment_id=aid))


@router.get("/courses/{cid}/package.zip")
def course_package(request: Request, cid: RowId):
    ctx = request.app.state.ctx
    try:
        role = _member(request, cid)
    except CourseError as exc:
        return render_error_page(request, exc.status, translate(exc.message,
                                                                request_lang(request)))
    now = utcnow()
    ids = [pid for a in service.assignments(ctx.db, cid)
           if role in STAFF or a.opens_at <= now for pid in a.problem_ids]
    with ctx.db.session() as s:
        title = s.get(Course, cid).title
    return _send(request, _problems(request, ids), Scope("course", title, course_id=cid))
