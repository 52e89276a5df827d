"""The worker API: how a grading worker on another host (`judge worker --server URL`) takes part
without database credentials. Every call carries the worker token (X-Worker-Token) that the
server is configured with (`judge serve --worker-token`, or $KVPRACTICE_WORKER_TOKEN).

    POST /api/workers/register            host, pid, device, slots -> worker ids, lease timings
    POST /api/workers/heartbeat           each slot's state; unknown ids must register again
    POST /api/workers/stopped             the worker is going away
    POST /api/workers/jobs/{id}/claim     take a queued submission: its code and a lease
    POST /api/workers/jobs/{id}/lease     renew the lease (while grading)
    POST /api/workers/jobs/{id}/events    progress events (kept only while the lease is held)
    POST /api/workers/jobs/{id}/result    the Report: stored once, by the lease holder only
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from sqlalchemy import select

from judge.judging.vocabulary import Event
from web.api import app_context
from web.http.edge import worker_token_refusal
from web.http.errors import ApiError
from web.http.request_input import RowId
from web.jobs import worker_table as workers
from web.jobs.runner import store_result, take_job
from web.store.db import WorkerRow
from web.store.lease import WorkerId

router = APIRouter(prefix="/api/workers", tags=["workers"])
WORKER_HEADER = "X-Worker-Token"
VERDICTS = {"AC", "WA", "RE", "TLE", "MLE", "OLE", "CE", "IE"}


def require_worker(request: Request) -> None:
    # The edge (web.http.edge) already refused a wrong token before the body was read; checked again
    # here so that a route never depends on the middleware being installed.
    refusal = worker_token_refusal(app_context(request).settings.worker_token,
                                   request.headers.get(WORKER_HEADER))
    if refusal is not None:
        raise ApiError(*refusal)


class RegisterIn(BaseModel):
    host: str = Field(min_length=1, max_length=120)
    pid: int = Field(ge=0)
    device: Literal["cpu", "cuda"]
    gpu_name: str | None = Field(None, max_length=200)
    slots: int = Field(1, ge=1, le=64)
    version: str | None = Field(None, max_length=64)


class SlotState(BaseModel):
    status: str = Field("idle", max_length=16)
    submission: int | None = None


class HeartbeatIn(BaseModel):
    workers: dict[str, SlotState]


class WorkersIn(BaseModel):
    workers: list[str] = Field(max_length=64)


class ClaimIn(BaseModel):
    worker: str = Field(min_length=1, max_length=200)


class LeaseIn(BaseModel):
    owner: str = Field(min_length=1, max_length=200)


class EventsIn(LeaseIn):
    attempt: int = 0
    events: list[dict] = Field(max_length=500)


class ResultIn(LeaseIn):
    attempt: int = 0
    report: dict


@router.post("/register", summary="A worker process announces its slots")
def register(request: Request, body: RegisterIn) -> dict:
    require_worker(request)
    ctx = app_context(request)
    ids = [str(WorkerId(body.host, body.pid, f"slot-{i + 1}")) for i in range(body.slots)]
    queues = "cuda,any" if body.device == "cuda" else "any"
    for wid in ids:
        workers.register(ctx.db, wid, kind="remote", host=body.host, device=body.device,
                         gpu_name=body.gpu_name, queues=queues, version=body.version)
    st = ctx.settings
    return {"workers": ids, "lease_s": st.lease_s, "heartbeat_s": st.heartbeat_s,
            "queues": queues.split(",")}


@router.post("/heartbeat", summary="Each slot's state; unknown slots must register again")
def heartbeat(request: Request, body: HeartbeatIn) -> dict:
    require_worker(request)
    db = app_context(request).db
    unknown = workers.beat(db, list(body.workers))
    for wid, state in body.workers.items():
        if wid not in unknown:
            workers.set_status(db, wid, state.status, state.submission)
    return {"unknown": unknown}


@router.post("/stopped", summary="The worker process is going away")
def stopped(request: Request, body: WorkersIn) -> dict:
    require_worker(request)
    workers.stopped(app_context(request).db, body.workers)
    return {"ok": True}


@router.post("/jobs/{submission_id}/claim", summary="Take a queued submission")
def claim(request: Request, submission_id: RowId, body: ClaimIn) -> dict:
    """`outcome`: claimed (with the code and the lease owner to quote later), skipped (it is
    done, someone else holds it, or it needs another device) or gave-up."""
    require_worker(request)
    ctx = app_context(request)
    with ctx.db.session() as s:
        row = s.scalar(select(WorkerRow).where(WorkerRow.id == body.worker))
        device = row.device if row is not None else None
    if device is None:
        raise ApiError(409, "unknown_worker", f"worker {body.worker} is not registered; "
                       "register again")
    outcome, c = take_job(ctx.db, ctx.settings, ctx.catalog, submission_id, body.worker,
                          device=device, with_version=True)
    return {"outcome": outcome, "claim": c.to_dict() if c else None,
            "lease_s": ctx.settings.lease_s, "heartbeat_s": ctx.settings.heartbeat_s}


@router.post("/jobs/{submission_id}/lease", summary="Renew the lease of a job being graded")
def renew(request: Request, submission_id: RowId, body: LeaseIn) -> dict:
    require_worker(request)
    ctx = app_context(request)
    return {"held": ctx.db.renew(submission_id, body.owner, ctx.settings.lease_s)}


@router.post("/jobs/{submission_id}/events", summary="Progress events of a job being graded")
def events(request: Request, submission_id: RowId, body: EventsIn) -> dict:
    require_worker(request)
    db = app_context(request).db
    if not db.holds(submission_id, body.owner):
        return {"stored": 0, "held": False}
    with db.session() as s:
        for ev in body.events:
            if ev.get("type") == Event.DONE:
                continue
            db.add_event(s, submission_id, str(ev.get("type", "event"))[:32], ev, body.attempt)
        s.commit()
    return {"stored": len(body.events), "held": True}


@router.post("/jobs/{submission_id}/result", summary="The Report of a job (stored once)")
def result(request: Request, submission_id: RowId, body: ResultIn) -> dict:
    require_worker(request)
    verdict = body.report.get("verdict")
    if verdict not in VERDICTS:
        raise ApiError(422, "bad_report", f"a report's verdict is one of {sorted(VERDICTS)}, "
                       f"not {verdict!r}")
    stored = store_result(app_context(request).db, submission_id, body.owner, body.attempt,
                          body.report)
    return {"stored": stored}
