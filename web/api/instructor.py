"""Instructor endpoints (the X-Instructor-Token header or the instructor page's cookie)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import func, select

from judge.grading.reference_cache import public_expectations_or_error

from web.api import app_context
from web.api.errors import ApiError
from web.api.identity import require_instructor
from web.api.request_input import RowId, errors_doc
from web.services.submissions import iso_time, view
from web.jobs import regrades
from web.jobs import worker_table as workers
from web.store.db import DONE, LIVE, QUEUED, RUNNING, Submission, Visitor
from web.store.gradebook import gradebook, gradebook_csv

router = APIRouter(prefix="/api")


@router.get("/instructor/overview", summary="Queue, workers, recent submissions, problem checks",
            tags=["instructor"], responses=errors_doc(401, 403))
def instructor_overview(request: Request) -> dict:
    """Requires the X-Instructor-Token header (or the cookie set by the instructor page)."""
    require_instructor(request)
    return overview(app_context(request))


@router.get("/instructor/submissions/{submission_id}", summary="Any submission, with its code",
            tags=["instructor"], responses=errors_doc(401, 403, 404))
def instructor_submission(request: Request, submission_id: RowId) -> dict:
    require_instructor(request)
    ctx = app_context(request)
    with ctx.db.session() as s:
        sub = s.get(Submission, submission_id)
        if sub is None:
            raise ApiError(404, "submission_not_found", f"there is no submission {submission_id}")
        out = view(ctx.db, s, sub).model_dump()
        v = s.get(Visitor, sub.visitor_id)
        out["visitor"] = {"id": v.id, "display_name": v.display_name} if v else None
        return out


@router.post("/instructor/problems/{problem_id}/check", status_code=202,
             summary="Start `judge check` on a problem (in the background)", tags=["instructor"],
             responses=errors_doc(401, 403, 404))
def instructor_check(request: Request, problem_id: str) -> dict:
    """The result appears in the overview's `problems[].judge_check` when it is done."""
    require_instructor(request)
    ctx = app_context(request)
    p = ctx.catalog.get(problem_id)
    if p is None:
        raise ApiError(404, "unknown_problem", f"there is no problem '{problem_id}'")
    started = ctx.checks.start(p)
    return {"problem": p.id, "started": started, "state": "running"}


@router.get("/instructor/gradebook", summary="Every student x every problem: best and latest "
            "verdict and score, attempts", tags=["instructor"], responses=errors_doc(401, 403))
def instructor_gradebook(request: Request) -> dict:
    require_instructor(request)
    ctx = app_context(request)
    return gradebook(ctx.db, [p.id for p in ctx.catalog.list()])


@router.get("/instructor/gradebook.csv", summary="The gradebook as CSV (for a spreadsheet)",
            tags=["instructor"], responses=errors_doc(401, 403), response_class=Response)
def instructor_gradebook_csv(request: Request) -> Response:
    """Cells a spreadsheet would read as a formula (= + - @) are prefixed with an apostrophe."""
    require_instructor(request)
    ctx = app_context(request)
    text = gradebook_csv(gradebook(ctx.db, [p.id for p in ctx.catalog.list()]))
    return Response(text, media_type="text/csv; charset=utf-8", headers={
        "Content-Disposition": 'attachment; filename="gradebook.csv"',
        "Cache-Control": "no-store"})


def overview(ctx) -> dict[str, Any]:
    from web.jobs.graders import judge_available
    with ctx.db.session() as s:
        counts = dict(s.execute(select(Submission.status, func.count())
                                .group_by(Submission.status)).all())
        recent = list(s.execute(select(Submission, Visitor.display_name)
                                .join(Visitor, Visitor.id == Submission.visitor_id)
                                .order_by(Submission.id.desc()).limit(30)).all())
        recent_rows = [{
            "id": r.id, "problem": r.problem_id, "visitor": r.visitor_id, "display_name": name,
            "kind": r.kind or LIVE, "status": r.status, "verdict": r.verdict, "score": r.score,
            "attempts": r.attempts, "graded_by": r.graded_by, "created_at": iso_time(r.created_at),
            "finished_at": iso_time(r.finished_at)} for r, name in recent]
    worker_rows = workers.listing(ctx.db, ctx.settings.stale_after_s)
    # live workers first, then the most recently seen
    worker_rows.sort(key=lambda w: (w["status"] in ("stopped", "not answering"),
                                    w["last_seen_s"]))
    problems = []
    for p in ctx.catalog.list():
        exp, why = public_expectations_or_error(p) if p.browser else (None, None)
        problems.append({"id": p.id, "slug": p.slug, "loads": True,
                         "public_tests": len([f for f in p.public_files()
                                              if f.rsplit("/", 1)[-1].startswith("test_")]),
                         "browser_expectations": exp is not None,
                         "check": why or "ok",
                         "judge_check": ctx.checks.status(p)})
    for folder, err in ctx.catalog.errors.items():
        problems.append({"id": folder, "slug": None, "loads": False, "check": err})
    ok, why = judge_available()
    return {"queue": {"queued": counts.get(QUEUED, 0), "running": counts.get(RUNNING, 0),
                      "done": counts.get(DONE, 0), "pending_tasks": ctx.jobs.pending_count(),
                      "kind": ctx.jobs.queue.kind},
            "workers": worker_rows, "recent": recent_rows, "problems": problems,
            "regrades": regrades.listing(ctx.db, limit=10),
            "grading_core": {"available": ok, "detail": why}}
