"""Regrades: every student's latest graded submission of a problem, graded again at low priority
(after the problem's tests changed, say), with a per-student verdict diff (AC->WA, ...) that an
instructor reviews before students see the new results.

A regrade job is a Submission row of kind "regrade" (priority below live submissions, shown only
to instructors), so it goes through the same queue, leases and exactly-once report as any other.
Approving copies each new report onto the student's submission; discarding leaves them as they
were. The database is the only thing touched here, so `judge regrade --db URL` works without a
running server (the server's reaper then queues the jobs).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Callable

from sqlalchemy import func, select

from judge.judging.vocabulary import Event
from web.store.db import (
    DONE,
    LIVE,
    QUEUED,
    REGRADE,
    REGRADE_PRIORITY,
    Database,
    Regrade,
    RegradeItem,
    Submission,
    Visitor,
    utcnow,
)

PENDING, APPROVED, DISCARDED = "pending", "approved", "discarded"
SYSTEM_VISITOR = "system:instructor"   # owns instructors' own jobs (parity checks)


class RegradeError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def system_visitor_id(db: Database) -> int:
    """The visitor row that instructors' jobs belong to (no token hashes to it)."""
    with db.session() as s:
        v = s.scalar(select(Visitor).where(Visitor.token_hash == SYSTEM_VISITOR))
        if v is None:
            v = Visitor(token_hash=SYSTEM_VISITOR, display_name="instructor")
            s.add(v)
            s.commit()
        return v.id


def start(db: Database, problem_id: str,
          enqueue: Callable[[int, int], None] | None = None) -> dict:
    """Queue a regrade of every student's latest graded submission of `problem_id`."""
    with db.session() as s:
        pending = s.scalar(select(Regrade.id).where(Regrade.problem_id == problem_id,
                                                    Regrade.status == PENDING))
        if pending is not None:
            raise RegradeError(409, "regrade_pending", f"regrade {pending} of problem "
                               f"{problem_id} awaits review: approve or discard it first")
        latest = s.execute(
            select(Submission.visitor_id, func.max(Submission.id))
            .where(Submission.kind == LIVE, Submission.problem_id == problem_id,
                   Submission.status == DONE)
            .group_by(Submission.visitor_id)).all()
        rg = Regrade(problem_id=problem_id, status=PENDING)
        s.add(rg)
        s.flush()
        jobs = []
        for visitor_id, sid in sorted(latest, key=lambda r: r[1]):
            orig = s.get(Submission, sid)
            job = Submission(visitor_id=visitor_id, problem_id=problem_id, code=orig.code,
                             code_sha256=orig.code_sha256, status=QUEUED, kind=REGRADE,
                             priority=REGRADE_PRIORITY, regrade_id=rg.id, regrade_of=sid,
                             requires_device=orig.requires_device)
            s.add(job)
            s.flush()
            db.add_event(s, job.id, Event.QUEUED, {"type": Event.QUEUED, "regrade": rg.id})
            s.add(RegradeItem(regrade_id=rg.id, visitor_id=visitor_id, submission_id=sid,
                              job_id=job.id, old_verdict=orig.verdict, old_score=orig.score))
            jobs.append((job.id, job.requires_device))
        s.commit()
        rid = rg.id
    if enqueue is not None:
        for jid, device in jobs:
            try:
                enqueue(jid, REGRADE_PRIORITY, device)
            except Exception:  # stored; the server's reaper queues it
                break
    return summary(db, rid)


def change(old: str | None, new: str | None) -> str:
    return "same" if old == new else f"{old or '-'}->{new or '-'}"


def summary(db: Database, regrade_id: int, items: bool = True) -> dict:
    with db.session() as s:
        rg = s.get(Regrade, regrade_id)
        if rg is None:
            raise RegradeError(404, "regrade_not_found", f"there is no regrade {regrade_id}")
        rows = s.execute(
            select(RegradeItem, Submission, Visitor.display_name)
            .join(Submission, Submission.id == RegradeItem.job_id)
            .join(Visitor, Visitor.id == RegradeItem.visitor_id, isouter=True)
            .where(RegradeItem.regrade_id == regrade_id).order_by(RegradeItem.id)).all()
    out_items, changes = [], Counter()
    graded = 0
    for item, job, name in rows:
        done = job.status == DONE
        graded += done
        ch = change(item.old_verdict, job.verdict) if done else None
        if ch:
            changes[ch] += 1
        out_items.append({
            "visitor": item.visitor_id, "display_name": name, "submission": item.submission_id,
            "job": item.job_id, "old": {"verdict": item.old_verdict, "score": item.old_score},
            "new": {"verdict": job.verdict if done else None,
                    "score": job.score if done else None, "status": job.status},
            "change": ch})
    state = rg.status
    if state == PENDING:
        state = "grading" if graded < len(rows) else "ready"
    out = {"id": rg.id, "problem": rg.problem_id, "status": rg.status, "state": state,
           "total": len(rows), "graded": graded,
           "changed": sum(n for k, n in changes.items() if k != "same"),
           "changes": dict(sorted(changes.items())),
           "created_at": rg.created_at.isoformat() + "Z",
           "decided_at": rg.decided_at.isoformat() + "Z" if rg.decided_at else None}
    if items:
        out["items"] = out_items
    return out


def listing(db: Database, limit: int = 20) -> list[dict]:
    with db.session() as s:
        ids = list(s.scalars(select(Regrade.id).order_by(Regrade.id.desc()).limit(limit)))
    return [summary(db, i) for i in ids]


def approve(db: Database, regrade_id: int) -> dict:
    """Publish the new results: each student's submission gets its regrade's report."""
    info = summary(db, regrade_id, items=False)
    if info["status"] != PENDING:
        raise RegradeError(409, "regrade_decided", f"regrade {regrade_id} was already "
                           f"{info['status']}")
    if info["state"] != "ready":
        raise RegradeError(409, "regrade_not_ready", f"regrade {regrade_id} is still grading "
                           f"({info['graded']}/{info['total']} done)")
    with db.session() as s:
        rg = s.get(Regrade, regrade_id)
        if rg.status != PENDING:  # decided meanwhile by another instructor
            raise RegradeError(409, "regrade_decided", f"regrade {regrade_id} was already "
                               f"{rg.status}")
        for item in s.scalars(select(RegradeItem).where(RegradeItem.regrade_id == regrade_id)):
            job, orig = s.get(Submission, item.job_id), s.get(Submission, item.submission_id)
            if orig is None or job is None or job.report_json is None:
                continue
            orig.report_json, orig.verdict, orig.score = job.report_json, job.verdict, job.score
            db.add_event(s, orig.id, Event.REGRADED, {"regrade": regrade_id,
                                                  "from": item.old_verdict, "to": job.verdict})
        rg.status, rg.decided_at = APPROVED, utcnow()
        s.commit()
    return summary(db, regrade_id)


def discard(db: Database, regrade_id: int) -> dict:
    """Drop the new results; jobs not yet started are not graded."""
    with db.session() as s:
        rg = s.get(Regrade, regrade_id)
        if rg is None:
            raise RegradeError(404, "regrade_not_found", f"there is no regrade {regrade_id}")
        if rg.status != PENDING:
            raise RegradeError(409, "regrade_decided", f"regrade {regrade_id} was already "
                               f"{rg.status}")
        for job in s.scalars(select(Submission).where(Submission.regrade_id == regrade_id,
                                                      Submission.status == QUEUED)):
            job.status, job.finished_at = DONE, utcnow()
            job.report_json = json.dumps({"verdict": None, "discarded": True})
        rg.status, rg.decided_at = DISCARDED, utcnow()
        s.commit()
    return summary(db, regrade_id)
