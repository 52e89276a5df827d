"""`POST /api/practice-runs`: Run, on the server, for a problem whose public tests the page cannot
run (numpy, torch). The answer is the public suite's report; nothing is stored or scored
(web/services/practice.py)."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from web.api import app_context
from web.http import drafts
from web.http.errors import ApiError
from web.http.identity import current_visitor
from web.http.lang import request_lang
from web.http.request_input import body_doc, errors_doc, json_body
from web.http.throttle import client_address
from web.services import practice
from web.services import submissions as service
from web.services.page_runs import runs_in_page

router = APIRouter(prefix="/api")
# Practice runs at once in this process: each is a sandboxed grading of the public suite.
_SLOTS = anyio.CapacityLimiter(2)


class PracticeRunIn(BaseModel):
    problem: str = Field(description="problem number, slug or folder name", min_length=1,
                         max_length=100)
    code: str = Field(description="the whole solution file, UTF-8")


def public_grader(problem, source: str) -> dict:
    """The grading core on the public suite alone (the sandbox, as for a submission)."""
    from judge import grade
    return grade(problem, source, suite="public", device="cpu").to_dict()


@router.post("/practice-runs", summary="Run the public tests on the server (not stored)",
             tags=["submissions"], openapi_extra=body_doc(PracticeRunIn),
             responses=errors_doc(400, 404, 409, 413, 415, 422, 429))
async def practice_run(request: Request) -> dict:
    """For a problem whose tests need numpy or torch (`browser` false): the public tests of the
    code, graded in the sandbox; no submission is stored, no score is given. The limits are a
    submission's (code size, per address, per visitor: rate and queued-or-running)."""
    ctx = app_context(request)
    st = ctx.settings
    body = await json_body(request, PracticeRunIn, limit=service.body_limit(st.max_code_bytes))
    problem = drafts.find(request, body.problem)  # a draft is platform staff's only
    if problem is None:
        raise ApiError(404, "unknown_problem", f"there is no problem '{body.problem}'")
    if runs_in_page(problem):
        raise ApiError(409, "runs_in_the_page", "this problem's public tests run in the page")
    service.check_code(st, body.code)
    lang = request_lang(request)
    service.check_address_rate(st, ctx.limits, client_address(request), lang)
    visitor = await anyio.to_thread.run_sync(current_visitor, request)
    state = request.app.state
    if not hasattr(state, "practice_limits"):
        state.practice_limits = practice.PracticeLimits(st)
    limits = state.practice_limits
    await anyio.to_thread.run_sync(limits.start, st, ctx.db, visitor.id, lang)
    grader = getattr(state, "practice_grader", None) or public_grader
    try:
        report = await anyio.to_thread.run_sync(grader, problem, body.code, limiter=_SLOTS)
    finally:
        limits.done(visitor.id)
    return {"problem": problem.id, "practice": True, "stored": False,
            "report": practice.practice_report(report)}
