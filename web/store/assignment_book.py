"""An assignment's gradebook: each student's score at the deadline by the assignment's rule.

Only a student's own submissions count (kind "live"), made from the opening time on. On time
means created at or before the deadline; late means after it and at or before the end of the late
window (never counted without one). Per problem the rule picks, among graded submissions:
`best` (highest score, AC first, earliest among equals) or `last` (the newest). The score at the
deadline uses on-time submissions only; a late one counts, less its penalty, when that is better.

A student's number for the assignment is `total_percent`: the mean of its problems' scores (a
problem not tried counts 0), in percent, one decimal. The page, the CSV, the JSON and the
instructor page all show that one number, and every exported number names its unit.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from typing import overload

from sqlalchemy import func, select

from web.store.accounts import (
    LAST,
    STUDENT,
    Account,
    Assignment,
    Course,
    Membership,
    RosterEntry,
)
from web.store.db import DONE, LIVE, Submission
from web.store.gradebook import formula_safe

TODO, TRIED, SOLVED, LATE = "to do", "tried", "solved", "late"
# Where a time stands for an assignment: a submission made then counts in full (OPEN), less the
# late penalty (LATE_WINDOW), or not at all (NOT_OPEN, CLOSED).
NOT_OPEN, OPEN, LATE_WINDOW, CLOSED = "not open", "open", "late window", "closed"


def phase(a: Assignment, at: datetime) -> str:
    """The one rule for what is on time and what late: the gradebook, the assignment page, the
    problem page and a submission's verdict all ask it (the server's clock decides)."""
    if at < a.opens_at:
        return NOT_OPEN
    if at <= a.deadline:
        return OPEN
    return LATE_WINDOW if a.late_until and at <= a.late_until else CLOSED


def counts_for(a: Assignment, at: datetime) -> float:
    """The fraction of its score a submission made at `at` counts for."""
    return {OPEN: 1.0, LATE_WINDOW: 1.0 - (a.late_penalty or 0.0)}.get(phase(a, at), 0.0)


@overload
def percent(fraction: float) -> float: ...
@overload
def percent(fraction: float | None) -> float | None: ...
def percent(fraction: float | None) -> float | None:
    """A score (a fraction of the points) in percent, as every gradebook writes it."""
    return None if fraction is None else round(fraction * 100, 1)


def total_percent(cells: list[dict]) -> float:
    return percent(sum(c["score"] or 0.0 for c in cells) / max(1, len(cells)))


def iso(dt: datetime | None) -> str | None:
    """ISO 8601 with the zone (the database keeps naive UTC)."""
    return dt.replace(tzinfo=timezone.utc).isoformat() if dt else None


def _pick(subs: list, rule: str):
    graded = [s for s in subs if s.status == DONE and s.verdict is not None]
    if not graded:
        return None
    if rule == LAST:
        return graded[-1]
    return max(graded, key=lambda s: (s.verdict == "AC", s.score or 0.0, -s.id))


def problem_cell(a: Assignment, subs: list) -> dict:
    """One student's standing on one problem of `a`; `subs` oldest first."""
    subs = [s for s in subs if s.created_at >= a.opens_at]
    on_time = [s for s in subs if phase(a, s.created_at) == OPEN]
    late = [s for s in subs if phase(a, s.created_at) == LATE_WINDOW]
    chosen, is_late = _pick(on_time, a.rule), False
    at_deadline = chosen.score or 0.0 if chosen else None
    score = at_deadline
    late_pick = _pick(late, a.rule)
    if late_pick is not None:
        late_score = (late_pick.score or 0.0) * counts_for(a, late_pick.created_at)
        if score is None or late_score > score:
            chosen, score, is_late = late_pick, late_score, True
    if chosen is not None and chosen.verdict == "AC":
        state = LATE if is_late else SOLVED
    else:
        state = TRIED if subs else TODO
    return {"state": state, "score_at_deadline": at_deadline, "score": score,
            "submission": chosen.id if chosen else None,
            "verdict": chosen.verdict if chosen else None,
            "submitted_at": iso(chosen.created_at) if chosen else None,
            "attempts": len(subs), "late": is_late}


def overall_state(cells: list[dict]) -> str:
    states = [c["state"] for c in cells]
    if states and all(s in (SOLVED, LATE) for s in states):
        return LATE if LATE in states else SOLVED
    return TODO if all(s == TODO for s in states) else TRIED


def student_view(db, a: Assignment, visitor_id: int) -> dict:
    """One student's cells by problem, and the assignment's state for them."""
    with db.session() as s:
        subs = list(s.scalars(select(Submission).where(
            Submission.visitor_id == visitor_id, Submission.kind == LIVE,
            Submission.problem_id.in_(a.problem_ids)).order_by(Submission.id)))
    cells = {p: problem_cell(a, [x for x in subs if x.problem_id == p]) for p in a.problem_ids}
    return {"cells": cells, "state": overall_state(list(cells.values()))}


def assignment_book(db, a: Assignment) -> dict:
    """Every student of the course: per problem the cell above, and the total."""
    with db.session() as s:
        # The course's roster names its students in the course's own gradebook.
        students = list(s.execute(
            select(Account.id, Account.username,
                   func.coalesce(RosterEntry.name, Account.display_name), Account.visitor_id)
            .join(Membership, Membership.account_id == Account.id)
            .outerjoin(RosterEntry, (RosterEntry.course_id == a.course_id)
                       & (RosterEntry.student_id == Account.username))
            .where(Membership.course_id == a.course_id, Membership.role == STUDENT)
            .order_by(Account.username)))
        vids = [v for *_, v in students]
        subs = list(s.scalars(select(Submission).where(
            Submission.visitor_id.in_(vids), Submission.kind == LIVE,
            Submission.problem_id.in_(a.problem_ids)).order_by(Submission.id))) if vids else []
    rows = []
    for aid, username, name, vid in students:
        mine = [x for x in subs if x.visitor_id == vid]
        cells = {p: problem_cell(a, [x for x in mine if x.problem_id == p])
                 for p in a.problem_ids}
        rows.append({"account": aid, "username": username, "display_name": name,
                     "state": overall_state(list(cells.values())),
                     "total_percent": total_percent(list(cells.values())), "cells": cells})
    return {"assignment": {"id": a.id, "title": a.title, "problems": a.problem_ids,
                           "opens_at": iso(a.opens_at), "deadline": iso(a.deadline),
                           "late_until": iso(a.late_until), "late_penalty": a.late_penalty,
                           "rule": a.rule},
            "students": rows}


# The instructor page lists this many assignments' totals, newest deadline first.
MAX_LISTED_BOOKS = 20


def latest_books(db, limit: int = MAX_LISTED_BOOKS) -> list[dict]:
    """The newest assignments of every course, each with its course's title and each student's
    total_percent: the instructor page's view of the grades (the practice gradebook beside it
    knows no deadline)."""
    with db.session() as s:
        rows = list(s.execute(select(Assignment, Course.title)
                              .join(Course, Course.id == Assignment.course_id)
                              .order_by(Assignment.deadline.desc(), Assignment.id.desc())
                              .limit(limit)))
    return [{"assignment": a, "course": title, "book": assignment_book(db, a)}
            for a, title in rows]


def counted_submissions(db, a: Assignment) -> dict[str, list[int]]:
    """Per problem, the submissions the gradebook counts (one per student who has one): what
    the course's "Regrade all" regrades, and nothing of anyone outside the course."""
    out: dict[str, list[int]] = {p: [] for p in a.problem_ids}
    for st in assignment_book(db, a)["students"]:
        for p, cell in st["cells"].items():
            if cell["submission"] is not None:
                out[p].append(cell["submission"])
    return out


# A cell's numbers as the exports name them (the page keeps fractions for its own arithmetic).
_CELL_EXPORT = {"score_at_deadline": "score_at_deadline_percent", "score": "score_percent"}


def book_json(book: dict) -> str:
    """The gradebook with every number's unit in its name: percentages (of each problem's
    points, of the assignment for the total, of the score for the late penalty)."""
    a = dict(book["assignment"])
    a["late_penalty_percent"] = percent(a.pop("late_penalty"))
    students = [{**st, "cells": {p: {_CELL_EXPORT.get(k, k): percent(v) if k in _CELL_EXPORT
                                     else v for k, v in c.items()}
                                 for p, c in st["cells"].items()}}
                for st in book["students"]]
    return json.dumps({"assignment": a, "students": students}, ensure_ascii=False, indent=1)


def book_csv(book: dict) -> str:
    """One row per student; per problem: score at the deadline (%), final score (%), verdict,
    the submission, its time (ISO 8601, UTC), attempts, late. Every text cell is quoted and made
    formula-safe; numbers are written as numbers."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_NONNUMERIC)
    head = ["student_id", "name", "state", "total %"]
    for p in book["assignment"]["problems"]:
        head += [f"{p} score at deadline %", f"{p} score %", f"{p} verdict", f"{p} submission",
                 f"{p} submitted at", f"{p} attempts", f"{p} late"]
    w.writerow([formula_safe(h) for h in head])

    def pct(v):
        return "" if v is None else percent(v)

    for st in book["students"]:
        row = [formula_safe(st["username"]), formula_safe(st["display_name"] or ""),
               st["state"], st["total_percent"]]
        for p in book["assignment"]["problems"]:
            c = st["cells"][p]
            row += [pct(c["score_at_deadline"]), pct(c["score"]), formula_safe(c["verdict"] or ""),
                    c["submission"] if c["submission"] is not None else "",
                    c["submitted_at"] or "", c["attempts"], "late" if c["late"] else ""]
        w.writerow(row)
    return out.getvalue()
