"""Regrades: every submission of a problem that a gradebook counts (each student's best, which
the practice gradebook counts, and each assignment's counted one), graded again at low priority
(after the problem's tests changed, say), with a per-student verdict diff (AC->WA, ...) that an
instructor reviews before students see the new results. A regrade with nothing to grade is
never made (it would only hold the pending slot and wait for an approval of nothing).

A regrade job is a Submission row of kind "regrade" (priority below live submissions, shown only
to instructors), so it goes through the same queue, leases and exactly-once report as any other.
Approving copies each new report onto the student's submission; discarding leaves them as they
were. The database is the only thing touched here, so `judge regrade --db URL` works without a
running server (the server's reaper then queues the jobs).

A course's "Regrade all" makes a regrade of that course (`course_id`): its students' counted
submissions only, with a pending slot of its own per problem, decided by the course's
instructors; the platform's regrade (no course) keeps its own slot.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Callable

from sqlalchemy import select

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


def counted(db: Database, problem_id: str) -> list[int]:
    """The submissions of `problem_id` some gradebook counts: each visitor's best graded one
    (web.store.gradebook's rule: an AC over any other verdict, then the score, the earliest
    among equals) and each assignment's counted one (web.store.assignment_book)."""
    from web.store.accounts import Assignment
    from web.store.assignment_book import counted_submissions
    best: dict[int, tuple] = {}
    with db.session() as s:
        for sid, vid, verdict, score in s.execute(
                select(Submission.id, Submission.visitor_id, Submission.verdict,
                       Submission.score)
                .where(Submission.kind == LIVE, Submission.problem_id == problem_id,
                       Submission.status == DONE, Submission.verdict.is_not(None))
                .order_by(Submission.id)):
            rank = (verdict == "AC", score or 0.0)
            if vid not in best or rank > best[vid][0]:
                best[vid] = (rank, sid)
        assignments = [a for a in s.scalars(select(Assignment).where(
            Assignment.problems.contains(problem_id))) if problem_id in a.problem_ids]
    ids = {sid for _, sid in best.values()}
    for a in assignments:
        ids.update(counted_submissions(db, a).get(problem_id, []))
    return sorted(ids)


def start(db: Database, problem_id: str,
          enqueue: Callable[[int, int, str | None], None] | None = None, course_id: int | None = None,
          submission_ids: list[int] | None = None) -> dict:
    """Queue a regrade of the submissions of `problem_id` a gradebook counts (the platform's:
    `counted`), or, for a course, of `submission_ids` (its students' counted submissions).
    Each scope has its own pending slot: a course's regrade never blocks the platform's.
    Nothing to regrade is a RegradeError, and no regrade is made."""
    if submission_ids is None:
        submission_ids = counted(db, problem_id)
    with db.session() as s:
        scope = (Regrade.course_id.is_(None) if course_id is None
                 else Regrade.course_id == course_id)
        pending = s.scalar(select(Regrade.id).where(Regrade.problem_id == problem_id,
                                                    Regrade.status == PENDING, scope))
        if pending is not None:
            raise RegradeError(409, "regrade_pending", f"regrade {pending} of problem "
                               f"{problem_id} awaits review: approve or discard it first")
        graded = (Submission.kind == LIVE, Submission.problem_id == problem_id,
                  Submission.status == DONE)
        latest = s.execute(select(Submission.visitor_id, Submission.id)
                           .where(*graded, Submission.id.in_(submission_ids))).all()
        if not latest:
            raise RegradeError(409, "nothing_to_regrade", f"no graded submission of problem "
                               f"{problem_id} is counted anywhere: there is nothing to regrade")
        rg = Regrade(problem_id=problem_id, status=PENDING, course_id=course_id)
        s.add(rg)
        s.flush()
        jobs = [_queue_one(db, s, rg.id, visitor_id, sid)
                for visitor_id, sid in sorted(latest, key=lambda r: r[1])]
        s.commit()
        rid = rg.id
    if enqueue is not None:
        for jid, device in jobs:
            try:
                enqueue(jid, REGRADE_PRIORITY, device)
            except Exception:  # stored; the server's reaper queues it
                break
    return summary(db, rid)


def _queue_one(db: Database, s, regrade_id: int, visitor_id: int, sid: int) -> tuple:
    """The regrade job of one student's submission, and its item; (job id, device)."""
    orig = s.get(Submission, sid)
    job = Submission(visitor_id=visitor_id, problem_id=orig.problem_id, code=orig.code,
                     code_sha256=orig.code_sha256, status=QUEUED, kind=REGRADE,
                     priority=REGRADE_PRIORITY, regrade_id=regrade_id, regrade_of=sid,
                     requires_device=orig.requires_device)
    s.add(job)
    s.flush()
    db.add_event(s, job.id, Event.QUEUED, {"type": Event.QUEUED, "regrade": regrade_id})
    s.add(RegradeItem(regrade_id=regrade_id, visitor_id=visitor_id, submission_id=sid,
                      job_id=job.id, old_verdict=orig.verdict, old_score=orig.score))
    return job.id, job.requires_device


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
    out_items: list[dict] = []
    changes: Counter[str] = Counter()
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
    out = {"id": rg.id, "problem": rg.problem_id, "course": rg.course_id,
           "status": rg.status, "state": state,
           "total": len(rows), "graded": graded,
           "changed": sum(n for k, n in changes.items() if k != "same"),
           "changes": dict(sorted(changes.items())),
           "created_at": rg.created_at.isoformat() + "Z",
           "decided_at": rg.decided_at.isoformat() + "Z" if rg.decided_at else None}
    if items:
        out["items"] = out_items
    return out


def listing(db: Database, limit: int = 20, course_id: int | None = None) -> list[dict]:
    """The newest regrades: all of them, or one course's only."""
    q = select(Regrade.id).order_by(Regrade.id.desc()).limit(limit)
    if course_id is not None:
        q = q.where(Regrade.course_id == course_id)
    with db.session() as s:
        ids = list(s.scalars(q))
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
