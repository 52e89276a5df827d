"""What the instructor page lists and how it knows to refresh: "Recent submissions" a page at a
time, filtered by problem, student and verdict; and a stamp of what the page shows that changes
when a submission is queued, claimed or finished, a regrade is started or decided, or a judge
check starts or ends (the page long-polls it and swaps in its changed sections)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, or_, select

from web.store.accounts import Account
from web.store.db import LIVE, QUEUED, RUNNING, Regrade, Submission, Visitor

PER_PAGE = 30
MAX_PAGE = 10_000
# A "verdict" filter may also name a state, for what has no verdict yet.
STATES = (QUEUED, RUNNING)


@dataclass(frozen=True)
class RecentFilter:
    problem: str = ""
    student: str = ""
    verdict: str = ""
    page: int = 1

    @classmethod
    def from_query(cls, query) -> "RecentFilter":
        try:
            page = min(MAX_PAGE, max(1, int(query.get("page") or 1)))
        except ValueError:
            page = 1
        return cls(problem=str(query.get("problem") or "").strip()[:100],
                   student=str(query.get("student") or "").strip()[:64],
                   verdict=str(query.get("verdict") or "").strip()[:16], page=page)

    def query(self, page: int) -> str:
        """The query string of another page of the same filter."""
        from urllib.parse import urlencode
        fields = {"problem": self.problem, "student": self.student, "verdict": self.verdict}
        return urlencode({**{k: v for k, v in fields.items() if v}, "page": page})


def _where(stmt, f: RecentFilter):
    if f.problem:
        stmt = stmt.where(Submission.problem_id == f.problem)
    if f.verdict in STATES:
        stmt = stmt.where(Submission.status == f.verdict)
    elif f.verdict:
        stmt = stmt.where(Submission.verdict == f.verdict)
    if f.student:
        # a username or a display name (part of it, any case), or "#12" / "12": a visitor's id
        like = "%" + f.student.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        conds: list[ColumnElement[bool]] = [Account.username.ilike(like, escape="\\"),
                 Visitor.display_name.ilike(like, escape="\\")]
        digits = f.student.lstrip("#")
        if digits.isdigit():
            conds.append(Submission.visitor_id == int(digits))
        stmt = stmt.where(or_(*conds))
    return stmt


def recent_submissions(db, f: RecentFilter, iso_time) -> dict:
    base = (select(Submission, Visitor.display_name, Account.username)
            .join(Visitor, Visitor.id == Submission.visitor_id)
            .outerjoin(Account, Account.visitor_id == Submission.visitor_id))
    with db.session() as s:
        total = s.scalar(_where(select(func.count()).select_from(Submission)
                                .join(Visitor, Visitor.id == Submission.visitor_id)
                                .outerjoin(Account, Account.visitor_id == Submission.visitor_id),
                                f))
        pages = max(1, -(-total // PER_PAGE))
        page = min(f.page, pages)
        rows = list(s.execute(_where(base, f).order_by(Submission.id.desc())
                              .offset((page - 1) * PER_PAGE).limit(PER_PAGE)).all())
    return {"rows": [{
        "id": r.id, "problem": r.problem_id, "visitor": r.visitor_id, "display_name": name,
        "username": username, "kind": r.kind or LIVE, "status": r.status, "verdict": r.verdict,
        "score": r.score, "attempts": r.attempts, "graded_by": r.graded_by,
        "created_at": iso_time(r.created_at), "finished_at": iso_time(r.finished_at)}
        for r, name, username in rows],
        "page": page, "pages": pages, "total": total,
        "prev": f.query(page - 1) if page > 1 else None,
        "next": f.query(page + 1) if page < pages else None,
        "filter": {"problem": f.problem, "student": f.student, "verdict": f.verdict}}


def stamp(ctx) -> str:
    """Changes whenever something the instructor page shows as running or done changes."""
    with ctx.db.session() as s:
        counts = sorted(s.execute(select(Submission.status, func.count(), func.max(Submission.id),
                                         func.max(Submission.finished_at))
                                  .group_by(Submission.status)).all())
        rgs = list(s.execute(select(Regrade.id, Regrade.status).order_by(Regrade.id.desc())
                             .limit(10)).all())
    checks = [(p.id, ctx.checks.status(p)) for p in ctx.catalog.list()]
    text = json.dumps([[list(c) for c in counts], [list(r) for r in rgs], checks], default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]

