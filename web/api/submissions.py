"""The JSON API of submissions: create one, list yours, read one, follow its progress (Server-Sent
Events). Problems are in web.api.problems, the visitor in web.api.visitors."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from datetime import timedelta

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field
from sqlalchemy import func, select

from judge.judging.vocabulary import Event

from web.api import app_context
from web.api.edge import MAX_ROW_ID
from web.api.errors import ApiError
from web.api.identity import current_visitor, token_hash
from web.api.request_input import RowId, body_doc, errors_doc, json_body
from web.api.throttle import client_address
from web.store.db import DONE, LIVE, QUEUED, RUNNING, Submission, SubmissionEvent, Visitor, utcnow

router = APIRouter(prefix="/api")


# ---------------------------------------------------------------- models (for validation + docs)


class SubmissionIn(BaseModel):
    problem: str = Field(description="problem number, slug or folder name, e.g. \"143\"",
                         min_length=1, max_length=100)
    code: str = Field(description="the whole solution file, UTF-8")


class SubmissionCreated(BaseModel):
    id: int
    status: str = "queued"
    queue_position: int | None = None
    url: str
    events: str


class SubmissionOut(BaseModel):
    id: int
    problem: str
    status: str = Field(description="queued | running | done")
    queue_position: int | None = Field(
        description="1 = next to be graded; null unless queued")
    report: dict | None = Field(description="the grading core's Report once done")
    verdict: str | None = None
    score: float | None = None
    created_at: str
    finished_at: str | None = None
    attempts: int = 0
    code: str | None = None


def iso_time(dt) -> str | None:
    return dt.isoformat() + "Z" if dt else None


def submission_json(ctx, s, sub: Submission, with_code: bool = True) -> dict:
    return {
        "id": sub.id, "problem": sub.problem_id, "status": sub.status,
        "queue_position": ctx.db.queue_position(s, sub), "report": sub.report,
        "verdict": sub.verdict, "score": sub.score, "created_at": iso_time(sub.created_at),
        "finished_at": iso_time(sub.finished_at), "attempts": sub.attempts,
        **({"code": sub.code} if with_code else {}),
    }


def _own_submission(ctx, s, request: Request, sid: int) -> Submission:
    """The submission, if this request may see it; looked up in the caller's session `s` (a
    second session per request would need two pooled connections per streaming client)."""
    from web.api.identity import instructor_ok, request_token
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


# ---------------------------------------------------------------- submissions


@router.post("/submissions", status_code=202, response_model=SubmissionCreated,
             summary="Submit code for grading", tags=["submissions"],
             openapi_extra=body_doc(SubmissionIn),
             responses=errors_doc(400, 401, 404, 413, 415, 422, 429))
async def create_submission(request: Request) -> JSONResponse:
    """Stores the submission, then answers 202 with its id; a worker grades it. Limits: code
    size, submissions per visitor per time window, queued-or-running submissions per visitor."""
    ctx = app_context(request)
    st = ctx.settings
    body = await json_body(request, SubmissionIn, limit=st.max_code_bytes * 6 + 4096)
    problem = ctx.catalog.get(body.problem)
    if problem is None:
        raise ApiError(404, "unknown_problem", f"there is no problem '{body.problem}'; "
                       "GET /api/problems lists them")
    try:
        size = len(body.code.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ApiError(422, "bad_code", "the code is not valid Unicode text (an unpaired "
                       f"surrogate at character {exc.start})") from None
    if size > st.max_code_bytes:
        raise ApiError(413, "code_too_large", f"the code is {size} bytes; the limit is "
                       f"{st.max_code_bytes} bytes")
    if not body.code.strip():
        raise ApiError(422, "empty_code", "the code is empty")
    address = client_address(request)
    wait = ctx.limits.submissions_by_address.hit(address)
    if wait is not None:
        raise ApiError(429, "rate_limited_address", f"at most {st.rate_limit_per_address} "
                       f"submissions per {int(st.rate_limit_window_s)} s from one address; try "
                       f"again in {int(wait) + 1} s", headers={"Retry-After": str(int(wait) + 1)})
    visitor = await anyio.to_thread.run_sync(current_visitor, request)
    # A problem that needs a GPU goes to the GPU workers' queue (distributed mode only: the
    # embedded workers take every job).
    needs = "cuda" if st.distributed and "cuda" in (problem.requires or []) else None

    def store() -> tuple[int, int]:
        with ctx.db.session() as s:
            active = s.scalar(select(func.count()).select_from(Submission).where(
                Submission.visitor_id == visitor.id, Submission.kind == LIVE,
                Submission.status.in_((QUEUED, RUNNING))))
            if active >= st.max_queued_per_visitor:
                raise ApiError(429, "too_many_queued", f"you already have {active} submissions "
                               f"waiting or being graded (at most {st.max_queued_per_visitor}); "
                               "wait for one to finish", headers={"Retry-After": "5"})
            from_here = s.scalar(select(func.count()).select_from(Submission).where(
                Submission.client_address == address, Submission.kind == LIVE,
                Submission.status.in_((QUEUED, RUNNING))))
            if from_here >= st.max_queued_per_address:
                raise ApiError(429, "too_many_queued_address", f"{from_here} submissions from "
                               f"your address are waiting or being graded (at most "
                               f"{st.max_queued_per_address}); wait for one to finish",
                               headers={"Retry-After": "5"})
            waiting = s.scalar(select(func.count()).select_from(Submission).where(
                Submission.problem_id == problem.id, Submission.kind == LIVE,
                Submission.status == QUEUED))
            if waiting >= st.max_queued_per_problem:
                raise ApiError(429, "queue_full", f"{waiting} submissions of this problem are "
                               "waiting to be graded; try again in a minute",
                               headers={"Retry-After": "60"})
            since = utcnow() - timedelta(seconds=st.rate_limit_window_s)
            recent = list(s.scalars(select(Submission.created_at).where(
                Submission.visitor_id == visitor.id, Submission.kind == LIVE,
                Submission.created_at >= since)
                .order_by(Submission.created_at)))
            if len(recent) >= st.rate_limit_count:
                wait = max(1, int((recent[0] - since).total_seconds()) + 1)
                raise ApiError(429, "rate_limited", f"at most {st.rate_limit_count} submissions "
                               f"per {int(st.rate_limit_window_s)} s; try again in {wait} s",
                               headers={"Retry-After": str(wait)})
            sub = Submission(visitor_id=visitor.id, problem_id=problem.id, code=body.code,
                             code_sha256=hashlib.sha256(body.code.encode()).hexdigest(),
                             status=QUEUED, requires_device=needs, client_address=address[:64])
            s.add(sub)
            s.flush()
            position = ctx.db.queue_position(s, sub)
            ctx.db.add_event(s, sub.id, Event.QUEUED, {"type": Event.QUEUED,
                                                   "queue_position": position})
            s.commit()
            return sub.id, position

    sid, position = await anyio.to_thread.run_sync(store)
    try:
        await anyio.to_thread.run_sync(lambda: ctx.jobs.enqueue(sid, device=needs))
    except Exception:  # stored; the reaper queues it again
        pass
    return JSONResponse(status_code=202, content={
        "id": sid, "status": QUEUED, "queue_position": position,
        "url": f"/submissions/{sid}", "events": f"/api/submissions/{sid}/events"})


@router.get("/submissions", summary="Your submissions, newest first", tags=["submissions"])
def my_submissions(request: Request, problem: str | None = None, limit: int = 50) -> dict:
    ctx = app_context(request)
    visitor = current_visitor(request, create=False)
    if visitor is None:
        return {"submissions": []}
    with ctx.db.session() as s:
        q = select(Submission).where(Submission.visitor_id == visitor.id,
                                     Submission.kind == LIVE)
        if problem:
            p = ctx.catalog.get(problem)
            q = q.where(Submission.problem_id == (p.id if p else problem))
        rows = s.scalars(q.order_by(Submission.id.desc()).limit(max(1, min(limit, 500))))
        return {"submissions": [
            {"id": r.id, "problem": r.problem_id, "status": r.status, "verdict": r.verdict,
             "score": r.score, "created_at": iso_time(r.created_at),
             "finished_at": iso_time(r.finished_at)} for r in rows]}


@router.get("/submissions/{submission_id}", response_model=SubmissionOut,
            summary="A submission's state and, once done, its Report", tags=["submissions"],
            responses=errors_doc(404))
def get_submission(request: Request, submission_id: RowId) -> dict:
    ctx = app_context(request)
    with ctx.db.session() as s:
        sub = _own_submission(ctx, s, request, submission_id)
        return submission_json(ctx, s, sub)


@router.get("/submissions/{submission_id}/events", summary="Live progress (Server-Sent Events)",
            tags=["submissions"], responses={200: {"content": {"text/event-stream": {}},
                                                   "description": "event stream"},
                                             **errors_doc(404)})
async def submission_events(request: Request, submission_id: RowId) -> StreamingResponse:
    """Events: `queued` (with queue_position), `position` (when it changes), `running`,
    `suite_started`, `test_started`, `test_finished` (test, verdict, time_s), `suite_finished`,
    `requeued` (the worker died; it will be graded again), and `done` (verdict, score), after
    which the stream ends. Each event's `id` can be sent back as `Last-Event-ID` to resume."""
    ctx = app_context(request)

    def check() -> str:
        with ctx.db.session() as s:
            return str(_own_submission(ctx, s, request, submission_id).visitor_id)
    owner = await anyio.to_thread.run_sync(check)
    raw = (request.headers.get("last-event-id") or request.query_params.get("after") or "0")
    last_id = int(raw) if raw.isdigit() and len(raw) <= 10 else 0
    last_id = min(last_id, MAX_ROW_ID)
    address = client_address(request)
    slots = ctx.limits.streams
    refused = slots.try_open(owner, address)
    if refused is not None:
        limit = slots.per_visitor if refused == "visitor" else slots.per_address
        raise ApiError(429, "too_many_streams", f"at most {limit} event streams at once per "
                       f"{refused}; close another tab or poll GET /api/submissions/"
                       f"{submission_id}", headers={"Retry-After": "5"})

    def poll(after: int):
        with ctx.db.session() as s:
            rows = list(s.scalars(select(SubmissionEvent)
                                  .where(SubmissionEvent.submission_id == submission_id,
                                         SubmissionEvent.id > after)
                                  .order_by(SubmissionEvent.id).limit(500)))
            sub = s.get(Submission, submission_id)
            return ([(r.id, r.type, r.data, r.attempt) for r in rows], sub.status,
                    ctx.db.queue_position(s, sub))

    async def stream():
        try:
            async for chunk in events():
                yield chunk
        finally:
            slots.close(owner, address)

    async def events():
        nonlocal last_id
        yield "retry: 2000\n\n"
        sent_position = None
        quiet_since = time.monotonic()
        while True:
            rows, status, position = await anyio.to_thread.run_sync(poll, last_id)
            for eid, type_, data, attempt in rows:
                data = dict(data, type=type_, attempt=attempt)
                if type_ == Event.QUEUED:
                    sent_position = data.get("queue_position")
                yield f"id: {eid}\nevent: {type_}\ndata: {json.dumps(data)}\n\n"
                last_id = eid
                if type_ == Event.DONE:
                    return
            if status == QUEUED and position != sent_position:
                sent_position = position
                data = {"type": Event.POSITION, "queue_position": position}
                yield f"event: {Event.POSITION}\ndata: {json.dumps(data)}\n\n"
            if status == DONE and not rows:
                # Done without a "done" row (should not happen): end the stream anyway.
                yield f"event: {Event.DONE}\ndata: {json.dumps({'type': Event.DONE})}\n\n"
                return
            if rows:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > 15:
                quiet_since = time.monotonic()
                yield ": keep-alive\n\n"
            if await request.is_disconnected():
                return
            await asyncio.sleep(ctx.settings.sse_poll_s)

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
