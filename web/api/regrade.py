"""Instructor endpoints for the operations of distributed grading: the workers, regrades (start,
review, approve or discard) and parity checks (a submission graded on a GPU worker)."""

from __future__ import annotations

import hashlib

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, Field

from judge.judging.vocabulary import Event
from web.api import app_context
from web.http.errors import ApiError
from web.http.identity import instructor_ok, require_instructor
from web.http.request_input import RowId, body_doc, errors_doc, json_body
from web.jobs import regrades
from web.jobs import worker_table as workers
from web.store.db import LIVE_PRIORITY, PARITY, QUEUED, Submission

router = APIRouter()


class RegradeIn(BaseModel):
    problem: str = Field(min_length=1, max_length=100)


class ParityIn(BaseModel):
    problem: str = Field(min_length=1, max_length=100)
    code: str


def _problem(ctx, ref: str):
    p = ctx.catalog.get(ref)
    if p is None:
        raise ApiError(404, "unknown_problem", f"there is no problem '{ref}'")
    return p


def _call(fn, *args):
    try:
        return fn(*args)
    except regrades.RegradeError as exc:
        raise ApiError(exc.status, exc.code, exc.message) from None


@router.get("/api/instructor/workers", summary="Grading workers: host, device, jobs, last seen",
            tags=["instructor"], responses=errors_doc(401, 403))
def list_workers(request: Request) -> dict:
    require_instructor(request)
    ctx = app_context(request)
    return {"workers": workers.listing(ctx.db, ctx.settings.stale_after_s)}


@router.get("/api/instructor/regrades", summary="Recent regrades with their verdict diffs",
            tags=["instructor"], responses=errors_doc(401, 403))
def list_regrades(request: Request) -> dict:
    require_instructor(request)
    return {"regrades": regrades.listing(app_context(request).db)}


@router.post("/api/instructor/regrades", status_code=202, tags=["instructor"],
             summary="Re-grade the submissions of a problem a gradebook counts (low priority)",
             openapi_extra=body_doc(RegradeIn), responses=errors_doc(401, 403, 404, 409))
async def start_regrade(request: Request) -> dict:
    """The new results stay hidden from students until the regrade is approved."""
    require_instructor(request)
    ctx = app_context(request)
    body = await json_body(request, RegradeIn, limit=4096)
    p = _problem(ctx, body.problem)
    return await anyio.to_thread.run_sync(
        lambda: _call(regrades.start, ctx.db, p.id, ctx.jobs.enqueue))


@router.get("/api/instructor/regrades/{regrade_id}", summary="A regrade's per-student diff",
            tags=["instructor"], responses=errors_doc(401, 403, 404))
def get_regrade(request: Request, regrade_id: RowId) -> dict:
    require_instructor(request)
    return _call(regrades.summary, app_context(request).db, regrade_id)


@router.post("/api/instructor/regrades/{regrade_id}/approve", tags=["instructor"],
             summary="Show the regrade's results to the students", responses=errors_doc(401, 403,
                                                                                      404, 409))
def approve_regrade(request: Request, regrade_id: RowId) -> dict:
    require_instructor(request)
    return _call(regrades.approve, app_context(request).db, regrade_id)


@router.post("/api/instructor/regrades/{regrade_id}/discard", tags=["instructor"],
             summary="Drop the regrade's results", responses=errors_doc(401, 403, 404, 409))
def discard_regrade(request: Request, regrade_id: RowId) -> dict:
    require_instructor(request)
    return _call(regrades.discard, app_context(request).db, regrade_id)


@router.post("/api/instructor/parity", status_code=202, tags=["instructor"],
             summary="Grade code on a GPU worker (for `judge parity`)",
             openapi_extra=body_doc(ParityIn), responses=errors_doc(401, 403, 404, 409, 413))
async def start_parity(request: Request) -> dict:
    """409 `no_gpu_worker` when no worker with a CUDA device has answered recently. Follow the
    job with GET /api/instructor/submissions/{id}."""
    require_instructor(request)
    ctx = app_context(request)
    body = await json_body(request, ParityIn, limit=ctx.settings.max_code_bytes * 6 + 4096)
    p = _problem(ctx, body.problem)
    if len(body.code.encode("utf-8")) > ctx.settings.max_code_bytes:
        raise ApiError(413, "code_too_large", "the code is over the size limit")

    def create() -> dict:
        gpus = workers.live_workers(ctx.db, ctx.settings.stale_after_s, queue="cuda")
        if not gpus:
            raise ApiError(409, "no_gpu_worker", "no grading worker with a CUDA device is "
                           "connected to this server (start one with `judge worker --device "
                           "cuda --server ...` on a GPU host)")
        with ctx.db.session() as s:
            sub = Submission(visitor_id=regrades.system_visitor_id(ctx.db), problem_id=p.id,
                             code=body.code, code_sha256=hashlib.sha256(
                                 body.code.encode()).hexdigest(),
                             status=QUEUED, kind=PARITY, priority=LIVE_PRIORITY,
                             requires_device="cuda")
            s.add(sub)
            s.flush()
            ctx.db.add_event(s, sub.id, Event.QUEUED, {"type": Event.QUEUED, "device": "cuda"})
            s.commit()
            sid = sub.id
        try:
            ctx.jobs.enqueue(sid, LIVE_PRIORITY, "cuda")
        except Exception:  # stored; the reaper queues it
            pass
        return {"id": sid, "status": QUEUED, "gpu_workers": [
            {"id": w["id"], "gpu_name": w["gpu_name"]} for w in gpus],
            "url": f"/api/instructor/submissions/{sid}"}

    return await anyio.to_thread.run_sync(create)


# ---------------------------------------------------------------- the instructor page's forms


@router.post("/instructor/regrades/{regrade_id}/{action}", include_in_schema=False)
def regrade_form(request: Request, regrade_id: RowId, action: str):
    if instructor_ok(request) and action in ("approve", "discard"):
        fn = regrades.approve if action == "approve" else regrades.discard
        try:
            fn(app_context(request).db, regrade_id)
        except regrades.RegradeError:
            pass  # the page shows the regrade's state
    return RedirectResponse("/instructor#regrades", status_code=303)


@router.post("/instructor/regrade/{ref}", include_in_schema=False)
def regrade_start_form(request: Request, ref: str):
    ctx = app_context(request)
    p = ctx.catalog.get(ref)
    if instructor_ok(request) and p is not None:
        try:
            regrades.start(ctx.db, p.id, ctx.jobs.enqueue)
        except regrades.RegradeError:
            pass
    return RedirectResponse("/instructor#regrades", status_code=303)
