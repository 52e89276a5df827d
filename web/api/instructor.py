"""Instructor endpoints (the X-Instructor-Token header or the instructor page's cookie)."""

from __future__ import annotations

from typing import Any

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import Response
from sqlalchemy import func, select

from judge.grading.reference_cache import public_expectations_or_error
from web.api import app_context
from web.http import drafts
from web.http.errors import ApiError
from web.http.identity import require_instructor
from web.http.request_input import RowId, errors_doc
from web.jobs import regrades
from web.jobs import worker_table as workers
from web.services.instructor_view import RecentFilter, recent_submissions, stamp
from web.services.submissions import iso_time, view
from web.store.db import DONE, QUEUED, RUNNING, Submission, Visitor
from web.store.gradebook import gradebook, gradebook_csv
from web.store.news import QUEUE

router = APIRouter(prefix="/api")


@router.get("/instructor/overview", summary="Queue, workers, recent submissions, problem checks",
            tags=["instructor"], responses=errors_doc(401, 403))
def instructor_overview(request: Request) -> dict:
    """Requires the X-Instructor-Token header (or the cookie set by the instructor page)."""
    require_instructor(request)
    return overview(app_context(request), RecentFilter.from_query(request.query_params))


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


@router.get("/instructor/changes", summary="Wait until what the instructor page shows changes",
            tags=["instructor"], responses=errors_doc(401, 403))
async def instructor_changes(request: Request, since: str = "", wait_s: float = 25.0) -> dict:
    """Answers at once when the page's stamp differs from `since`, else when it changes (a
    submission queued, claimed or finished; a regrade or a judge check started or ended), else
    after `wait_s` (at most 30) with `changed: false`."""
    require_instructor(request)
    ctx = app_context(request)
    give_up = anyio.current_time() + min(max(wait_s, 0.0), 30.0)
    # Queue events wake the wait at once; checks and regrades are looked at every second.
    with ctx.db.news.subscribe(QUEUE) as waiter:
        while True:
            now = await anyio.to_thread.run_sync(stamp, ctx)
            left = give_up - anyio.current_time()
            if now != since or left <= 0 or await request.is_disconnected():
                return {"stamp": now, "changed": now != since}
            await waiter.wait(min(1.0, left))


def overview(ctx, recent: RecentFilter | None = None) -> dict[str, Any]:
    from web.jobs.graders import judge_available
    # The stamp is taken before what it stamps: a change that lands while the page is read
    # then leaves the page with an older stamp, and its live poll answers at once. Taken
    # after, the page could show a row as running under a stamp that already says done, and
    # wait for a change that has happened (seen: CI, a row of class_flow never turning done).
    page_stamp = stamp(ctx)
    with ctx.db.session() as s:
        counts = dict(s.execute(select(Submission.status, func.count())
                                .group_by(Submission.status)).all())
    listing = recent_submissions(ctx.db, recent or RecentFilter(), iso_time)
    recent_rows = listing.pop("rows")
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
                         "judge_check": ctx.checks.status(p),
                         "draft": p.config.draft and not drafts.published(ctx, p)})
    for folder, err in ctx.catalog.errors.items():
        problems.append({"id": folder, "slug": None, "loads": False, "check": err})
    ok, why = judge_available()
    return {"queue": {"queued": counts.get(QUEUED, 0), "running": counts.get(RUNNING, 0),
                      "done": counts.get(DONE, 0), "pending_tasks": ctx.jobs.pending_count(),
                      "kind": ctx.jobs.queue.kind},
            "workers": worker_rows, "recent": recent_rows, "recent_page": listing,
            "stamp": page_stamp, "problems": problems,
            "regrades": regrades.listing(ctx.db, limit=10),
            "grading_core": {"available": ok, "detail": why}}
