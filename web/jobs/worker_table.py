"""The worker table: who grades (threads of the server, processes on other hosts), on what
device, what they are doing and when they last answered. Shown on the instructor page."""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import select, update

from web.store.db import Database, WorkerRow, utcnow

log = logging.getLogger(__name__)


def register(db: Database, wid: str, *, kind: str, host: str | None, device: str | None,
             gpu_name: str | None = None, queues: str = "any", version: str | None = None,
             status: str = "idle") -> None:
    """Create or reset a worker's row (a restarted worker keeps its graded count)."""
    with db.session() as s:
        row = s.get(WorkerRow, wid)
        if row is None:
            row = WorkerRow(id=wid, graded=0)
            s.add(row)
        now = utcnow()
        row.started_at = row.heartbeat_at = now
        row.kind, row.host, row.device, row.gpu_name = kind, host, device, gpu_name
        row.queues, row.version, row.status = queues, version, status
        row.current_submission_id = None
        s.commit()


def set_status(db: Database, wid: str, status: str, sid: int | None,
               graded: bool = False) -> None:
    """What a worker does now; `graded`: it just stored a report. Never raises."""
    try:
        with db.session() as s:
            row = s.get(WorkerRow, wid)
            if row is None:
                row = WorkerRow(id=wid, graded=0)
                s.add(row)
            row.status, row.current_submission_id = status, sid
            row.heartbeat_at = utcnow()
            if graded:
                row.graded = (row.graded or 0) + 1
            s.commit()
    except Exception:
        log.exception("worker table update failed")


def beat(db: Database, ids: list[str], status: str | None = None) -> list[str]:
    """A heartbeat of these workers; the ids the table does not know (to register again)."""
    if not ids:
        return []
    with db.session() as s:
        known = set(s.scalars(select(WorkerRow.id).where(WorkerRow.id.in_(ids))))
        values: dict = {"heartbeat_at": utcnow()}
        if status is not None:
            values["status"] = status
        if known:
            s.execute(update(WorkerRow).where(WorkerRow.id.in_(known)).values(**values)
                      .execution_options(synchronize_session=False))
        s.commit()
    return [i for i in ids if i not in known]


def stopped(db: Database, ids: list[str]) -> None:
    if not ids:
        return
    with db.session() as s:
        s.execute(update(WorkerRow).where(WorkerRow.id.in_(ids))
                  .values(status="stopped", current_submission_id=None, heartbeat_at=utcnow())
                  .execution_options(synchronize_session=False))
        s.commit()


def listing(db: Database, stale_after_s: float) -> list[dict]:
    """Every worker for the instructor page, newest first; a silent one is "not answering"."""
    now = utcnow()
    stale = timedelta(seconds=stale_after_s)
    with db.session() as s:
        rows = list(s.scalars(select(WorkerRow).order_by(WorkerRow.heartbeat_at.desc(),
                                                         WorkerRow.id)))
    out = []
    for w in rows:
        silent = now - w.heartbeat_at >= stale
        out.append({
            "id": w.id, "kind": w.kind or "embedded", "host": w.host or w.id.split(":", 1)[0],
            "device": w.device, "gpu_name": w.gpu_name, "queues": w.queues,
            "status": w.status if w.status == "stopped" or not silent else "not answering",
            "submission": w.current_submission_id, "graded": w.graded,
            "heartbeat_at": w.heartbeat_at.isoformat() + "Z",
            "last_seen_s": round((now - w.heartbeat_at).total_seconds(), 1),
            "started_at": w.started_at.isoformat() + "Z", "version": w.version})
    return out


def live_workers(db: Database, stale_after_s: float, queue: str = "any") -> list[dict]:
    """Workers that answered recently and take jobs from `queue` ("cuda": GPU workers)."""
    return [w for w in listing(db, stale_after_s)
            if w["status"] not in ("stopped", "not answering")
            and queue in (w["queues"] or "any").split(",")]
