"""The JSON API of submissions: create one, list yours, read one, follow its progress (Server-Sent
Events). Problems are in web.api.problems, the visitor in web.api.visitors."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from sqlalchemy import select

from web.api import app_context
from web.http import drafts
from web.http.edge import MAX_ROW_ID
from web.http.errors import ApiError
from web.http.identity import current_visitor, request_account
from web.http.lang import request_lang
from web.http.request_input import RowId, body_doc, errors_doc, json_body
from web.http.throttle import client_address
from web.services import events as event_stream
from web.services import submissions as service
from web.services.submissions import SubmissionCreated, SubmissionOut, SubmissionSummary
from web.store.db import LIVE, Submission, Visitor, token_hash

router = APIRouter(prefix="/api")


class SubmissionIn(BaseModel):
    problem: str = Field(description="problem number, slug or folder name, e.g. \"143\"",
                         min_length=1, max_length=100)
    code: str = Field(description="the whole solution file, UTF-8")


class SubmissionList(BaseModel):
    submissions: list[SubmissionSummary]


def _own_submission(ctx, s, request: Request, sid: int) -> Submission:
    """The submission, if this request may see it; looked up in the caller's session `s` (a
    second session per request would need two pooled connections per streaming client)."""
    from web.http.identity import instructor_ok, request_token
    sub = s.get(Submission, sid)
    if sub is not None and instructor_ok(request):
        return sub
    token = request_token(request)
    visitor = (s.scalar(select(Visitor).where(Visitor.token_hash == token_hash(token)))
               if token else None)
    if sub is None or visitor is None or sub.visitor_id != visitor.id or \
            (sub.kind or LIVE) != LIVE:  # regrade jobs stay hidden until approved
        raise ApiError(404, "submission_not_found",
                       f"there is no submission {sid} among yours (a visitor sees only "
                       "their own submissions)")
    return sub


def _signed_in(request: Request) -> bool:
    """A signed-in page or a personal token (judge.py submit): the account's limits."""
    return request_account(request) is not None


# ---------------------------------------------------------------- submissions


@router.post("/submissions", status_code=202, response_model=SubmissionCreated,
             summary="Submit code for grading", tags=["submissions"],
             openapi_extra=body_doc(SubmissionIn),
             responses=errors_doc(400, 401, 404, 413, 415, 422, 429))
async def create_submission(request: Request) -> SubmissionCreated:
    """Stores the submission, then answers 202 with its id; a worker grades it. Limits: code
    size, submissions per visitor per time window, queued-or-running submissions per visitor."""
    ctx = app_context(request)
    st = ctx.settings
    body = await json_body(request, SubmissionIn, limit=service.body_limit(st.max_code_bytes))
    problem = drafts.find(request, body.problem)  # a draft is platform staff's only
    if problem is None:
        raise ApiError(404, "unknown_problem", f"there is no problem '{body.problem}'; "
                       "GET /api/problems lists them")
    service.check_code(st, body.code)
    address = client_address(request)
    lang = request_lang(request)
    # A signed-in student (a session, no Bearer token of an API client) is limited per account.
    account = await anyio.to_thread.run_sync(_signed_in, request)
    if not account:
        service.check_address_rate(st, ctx.limits, address, lang)
    visitor = await anyio.to_thread.run_sync(current_visitor, request)
    device = service.device_needed(st, problem, body.code)
    stored = await anyio.to_thread.run_sync(
        service.store, ctx.db, st, visitor.id, problem.id, body.code, address, device, account,
        lang)
    await anyio.to_thread.run_sync(service.enqueue, ctx.jobs, stored.id, device)
    return service.created(stored.id, stored.queue_position)


@router.get("/submissions", response_model=SubmissionList,
            summary="Your submissions, newest first", tags=["submissions"])
def my_submissions(request: Request, problem: str | None = None,
                   limit: int = 50) -> SubmissionList:
    ctx = app_context(request)
    visitor = current_visitor(request, create=False)
    if visitor is None:
        return SubmissionList(submissions=[])
    with ctx.db.session() as s:
        q = select(Submission).where(Submission.visitor_id == visitor.id,
                                     Submission.kind == LIVE)
        if problem:
            p = ctx.catalog.get(problem)
            q = q.where(Submission.problem_id == (p.id if p else problem))
        rows = s.scalars(q.order_by(Submission.id.desc())
                         .limit(max(1, min(limit, service.MAX_LIST))))
        return SubmissionList(submissions=[service.summary(r) for r in rows])


@router.get("/submissions/{submission_id}", response_model=SubmissionOut,
            summary="A submission's state and, once done, its Report", tags=["submissions"],
            responses=errors_doc(404))
def get_submission(request: Request, submission_id: RowId) -> SubmissionOut:
    ctx = app_context(request)
    with ctx.db.session() as s:
        sub = _own_submission(ctx, s, request, submission_id)
        return service.view(ctx.db, s, sub)


@router.get("/submissions/{submission_id}/events", summary="Live progress (Server-Sent Events)",
            tags=["submissions"], responses={200: {"content": {"text/event-stream": {}},
                                                   "description": "event stream"},
                                             **errors_doc(404)})
async def submission_events(request: Request, submission_id: RowId) -> StreamingResponse:
    """Events: `queued` (with queue_position), `position` (when it changes), `running`,
    `suite_started`, `test_started`, `test_finished` (test, verdict, time_s), `suite_finished`,
    `requeued` (the worker died; it will be graded again), and `done` (verdict, score and the
    whole `report`), after which the stream ends. Each event's `id` can be sent back as `Last-Event-ID` to resume."""
    ctx = app_context(request)

    def check() -> str:
        with ctx.db.session() as s:
            return str(_own_submission(ctx, s, request, submission_id).visitor_id)
    owner = await anyio.to_thread.run_sync(check)
    raw = (request.headers.get("last-event-id") or request.query_params.get("after") or "0")
    last_id = int(raw) if raw.isdigit() and len(raw) <= 10 else 0
    last_id = min(last_id, MAX_ROW_ID)
    # A signed-in student's streams count against the account only (a class shares an address).
    signed_in = await anyio.to_thread.run_sync(_signed_in, request)
    address = None if signed_in else client_address(request)
    slots = ctx.limits.streams
    refused = slots.try_open(owner, address)
    if refused is not None:
        limit = slots.per_visitor if refused == "visitor" else slots.per_address
        raise ApiError(429, "too_many_streams", f"at most {limit} event streams at once per "
                       f"{refused}; close another tab or poll GET /api/submissions/"
                       f"{submission_id}", headers={"Retry-After": "5"})

    # Embedded, every writer is in this process and wakes the stream; distributed, a second
    # server process on the same database may write too, so the rows are also polled.
    look_every_s = (ctx.settings.sse_poll_s if ctx.settings.distributed
                    else event_stream.OTHER_WRITERS_S)

    async def chunks():
        try:
            async for chunk in event_stream.stream(ctx.db, submission_id, last_id,
                                                   look_every_s, request.is_disconnected):
                yield chunk
        finally:
            slots.close(owner, address)

    return StreamingResponse(chunks(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
