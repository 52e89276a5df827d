"""Where a student stands with the assignments a problem belongs to: what the problem page shows
beside Submit (each assignment's due time and, once the deadline has passed, what a submission
now counts for) and what a verdict says (what that submission counted for). The rule is the
gradebook's own (web.store.assignment_book.phase), so the page never promises what the
gradebook does not keep."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from web.store.accounts import STUDENT, Account, Assignment, Course, Membership
from web.store.assignment_book import CLOSED, counts_for, iso, phase

# A problem set in more assignments than this is shown with the nearest deadlines only: the
# line beside Submit stays a line.
MAX_SHOWN = 4


def assignments_of(db, visitor_id: int, problem_id: str) -> list[tuple[Assignment, str]]:
    """(assignment, course title) for each assignment with the problem in a course where the
    visitor's account is a student; nearest deadline first."""
    with db.session() as s:
        rows = s.execute(
            select(Assignment, Course.title)
            .join(Course, Course.id == Assignment.course_id)
            .join(Membership, Membership.course_id == Assignment.course_id)
            .join(Account, Account.id == Membership.account_id)
            .where(Account.visitor_id == visitor_id, Membership.role == STUDENT,
                   Assignment.problems.contains(problem_id))
            .order_by(Assignment.deadline, Assignment.id)).all()
    # `contains` is a text match on the comma-separated ids: keep the exact ones only
    return [(a, title) for a, title in rows if problem_id in a.problem_ids]


def _entry(a: Assignment, course: str, at: datetime) -> dict:
    return {"assignment": a.id, "course_id": a.course_id, "title": a.title, "course": course,
            "phase": phase(a, at), "counts": counts_for(a, at),
            "opens_at": iso(a.opens_at), "deadline": iso(a.deadline),
            "late_until": iso(a.late_until), "late_factor": 1.0 - (a.late_penalty or 0.0)}


def due_now(db, visitor_id: int | None, problem_id: str, now: datetime) -> list[dict]:
    """The problem page's line: the assignments still to come or running first, then closed
    ones, at most MAX_SHOWN."""
    if visitor_id is None:
        return []
    found = [_entry(a, c, now) for a, c in assignments_of(db, visitor_id, problem_id)]
    found.sort(key=lambda e: e["phase"] == CLOSED)  # stable: by deadline within each group
    return found[:MAX_SHOWN]


def submission_standing(db, visitor_id: int, problem_id: str, made_at: datetime) -> list[dict]:
    """What one submission, made at `made_at`, counts for in each of its author's assignments
    with the problem (its verdict says so)."""
    return [_entry(a, c, made_at) for a, c in assignments_of(db, visitor_id, problem_id)][
        :MAX_SHOWN]
