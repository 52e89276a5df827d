"""What may be done to a course, by whom. Every function takes the acting account's role in the
course (`role_in`), so a page cannot forget to ask: a non-member gets "no such course"."""

from __future__ import annotations

import csv
import io
import secrets
from datetime import datetime, timezone

from sqlalchemy import select

from web.store.accounts import (
    ASSISTANT,
    BEST,
    INSTRUCTOR,
    LAST,
    ROLES,
    STUDENT,
    Account,
    Assignment,
    Course,
    Membership,
    RosterEntry,
)
from web.store.db import Visitor

MAX_ROSTER_ROWS = 2000


class CourseError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def not_found() -> CourseError:
    return CourseError(404, "course_not_found", "There is no such course among yours.")


def role_in(db, course_id: int, account: Account | None, staff: bool = False) -> str:
    """The role of `account` in the course; platform staff act as instructors everywhere."""
    with db.session() as s:
        if s.get(Course, course_id) is None:
            raise not_found()
        if staff:
            return INSTRUCTOR
        if account is None:
            raise not_found()
        role = s.scalar(select(Membership.role).where(Membership.course_id == course_id,
                                                      Membership.account_id == account.id))
    if role is None:
        raise not_found()
    return role


def require(role: str, *allowed: str) -> None:
    if role not in allowed:
        raise CourseError(403, "not_allowed", "Your role in this course does not allow that.")


def my_courses(db, account: Account | None, staff: bool) -> list[dict]:
    with db.session() as s:
        if staff:
            return [{"course": c, "role": INSTRUCTOR}
                    for c in s.scalars(select(Course).order_by(Course.id))]
        if account is None:
            return []
        return [{"course": c, "role": r} for c, r in s.execute(
            select(Course, Membership.role).join(Membership, Membership.course_id == Course.id)
            .where(Membership.account_id == account.id).order_by(Course.id))]


def create_course(db, account: Account | None, title: str) -> Course:
    title = " ".join((title or "").split())[:200]
    if not title:
        raise CourseError(422, "bad_title", "A course needs a title.")
    with db.session() as s:
        c = Course(title=title, join_code=secrets.token_urlsafe(6))
        s.add(c)
        s.flush()
        if account is not None:
            s.add(Membership(course_id=c.id, account_id=account.id, role=INSTRUCTOR))
        s.commit()
        return c


def join(db, account: Account, code: str) -> Course:
    with db.session() as s:
        c = s.scalar(select(Course).where(Course.join_code == (code or "").strip()))
        if c is None:
            raise CourseError(404, "bad_join_code", "No course has that join code.")
        if s.scalar(select(Membership.id).where(Membership.course_id == c.id,
                                                Membership.account_id == account.id)) is None:
            s.add(Membership(course_id=c.id, account_id=account.id, role=STUDENT))
            s.commit()
        return c


def members(db, course_id: int) -> list[dict]:
    with db.session() as s:
        return [{"account": a.id, "username": a.username, "display_name": a.display_name,
                 "role": r, "visitor_id": a.visitor_id} for a, r in s.execute(
            select(Account, Membership.role).join(Membership, Membership.account_id == Account.id)
            .where(Membership.course_id == course_id).order_by(Membership.role, Account.username))]


def set_role(db, course_id: int, actor_role: str, account_id: int, role: str) -> None:
    require(actor_role, INSTRUCTOR)
    if role not in ROLES:
        raise CourseError(422, "bad_role", "A role is instructor, assistant or student.")
    with db.session() as s:
        m = s.scalar(select(Membership).where(Membership.course_id == course_id,
                                              Membership.account_id == account_id))
        if m is None:
            raise CourseError(404, "not_a_member", "That account is not in this course.")
        m.role = role
        s.commit()


def add_member(db, course_id: int, actor_role: str, username: str, role: str) -> None:
    require(actor_role, INSTRUCTOR)
    with db.session() as s:
        a = s.scalar(select(Account).where(Account.username == (username or "").strip().lower()))
        if a is None:
            raise CourseError(404, "no_such_account", "No account has that username.")
        if s.scalar(select(Membership.id).where(Membership.course_id == course_id,
                                                Membership.account_id == a.id)) is None:
            s.add(Membership(course_id=course_id, account_id=a.id, role=STUDENT))
            s.commit()
        aid = a.id
    set_role(db, course_id, actor_role, aid, role)


def member_account(db, course_id: int, account_id: int) -> Account:
    with db.session() as s:
        a = s.scalar(select(Account).join(Membership, Membership.account_id == Account.id)
                     .where(Membership.course_id == course_id, Account.id == account_id))
    if a is None:
        raise CourseError(404, "not_a_member", "That account is not in this course.")
    return a


def load_roster(db, course_id: int, actor_role: str, text: str) -> int:
    """Rows "student_id,name" (a header row is skipped); existing accounts join at once, the
    others when they sign up. How many rows were read."""
    require(actor_role, INSTRUCTOR)
    rows = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
    if rows and rows[0][0].strip().lower() in ("student_id", "id", "student id"):
        rows = rows[1:]
    if len(rows) > MAX_ROSTER_ROWS:
        raise CourseError(413, "roster_too_long", "A roster has at most 2000 rows.")
    n = 0
    with db.session() as s:
        for r in rows:
            sid = r[0].strip().lower()[:64]
            name = " ".join((r[1] if len(r) > 1 else sid).split())[:64] or sid
            if not sid or any(not ch.isprintable() for ch in sid + name):
                continue
            e = s.scalar(select(RosterEntry).where(RosterEntry.course_id == course_id,
                                                   RosterEntry.student_id == sid))
            if e is None:
                s.add(RosterEntry(course_id=course_id, student_id=sid, name=name))
            else:
                e.name = name
            a = s.scalar(select(Account).where(Account.username == sid))
            if a is not None:
                if s.scalar(select(Membership.id).where(Membership.course_id == course_id,
                                                        Membership.account_id == a.id)) is None:
                    s.add(Membership(course_id=course_id, account_id=a.id, role=STUDENT))
                a.display_name = name
                s.get(Visitor, a.visitor_id).display_name = name
            n += 1
        s.commit()
    return n


def parse_time(value: str, tz_offset_min: int = 0) -> datetime | None:
    """An ISO 8601 time (a zone in it, or the form's `tz_offset_min`, minutes east of UTC) as
    naive UTC; None for an empty value."""
    from datetime import timedelta
    value = (value or "").strip()
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise CourseError(422, "bad_time",
                          "A time is written 2025-03-14T23:59 (ISO 8601).") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone(timedelta(minutes=tz_offset_min)))
    return dt.astimezone(timezone.utc).replace(tzinfo=None)


def create_assignment(db, catalog, course_id: int, actor_role: str, title: str,
                      problems: list[str], opens_at: datetime, deadline: datetime,
                      late_until: datetime | None, late_penalty: float, rule: str) -> Assignment:
    require(actor_role, INSTRUCTOR)
    ids = []
    for ref in problems:
        p = catalog.get(ref.strip())
        if p is None:
            raise CourseError(404, "unknown_problem", f"There is no problem '{ref.strip()}'.")
        if p.id not in ids:
            ids.append(p.id)
    title = " ".join((title or "").split())[:200]
    if not title or not ids:
        raise CourseError(422, "bad_assignment", "An assignment needs a title and problems.")
    _check_times(opens_at, deadline, late_until, late_penalty, rule)
    with db.session() as s:
        a = Assignment(course_id=course_id, title=title, problems=",".join(ids),
                       opens_at=opens_at, deadline=deadline, late_until=late_until,
                       late_penalty=late_penalty, rule=rule)
        s.add(a)
        s.commit()
        return a


def _check_times(opens_at, deadline, late_until, late_penalty: float, rule: str) -> None:
    if deadline < opens_at or (late_until is not None and late_until < deadline):
        raise CourseError(422, "bad_times", "The deadline must follow the opening time, and "
                          "the late window the deadline.")
    if not 0.0 <= late_penalty <= 1.0 or rule not in (BEST, LAST):
        raise CourseError(422, "bad_rule", "The penalty is 0-100 % and the rule best or last.")


def update_times(db, course_id: int, assignment_id: int, actor_role: str, opens_at: datetime,
                 deadline: datetime, late_until: datetime | None, late_penalty: float,
                 rule: str) -> Assignment:
    """An instructor moves an assignment's times (a deadline extended, a late window opened);
    the gradebook is computed from the times, so it follows at once."""
    require(actor_role, INSTRUCTOR)
    _check_times(opens_at, deadline, late_until, late_penalty, rule)
    with db.session() as s:
        a = s.get(Assignment, assignment_id)
        if a is None or a.course_id != course_id:
            raise CourseError(404, "assignment_not_found", "There is no such assignment.")
        a.opens_at, a.deadline, a.late_until = opens_at, deadline, late_until
        a.late_penalty, a.rule = late_penalty, rule
        s.commit()
        return a


def assignments(db, course_id: int) -> list[Assignment]:
    with db.session() as s:
        return list(s.scalars(select(Assignment).where(Assignment.course_id == course_id)
                              .order_by(Assignment.deadline, Assignment.id)))


def assignment(db, course_id: int, assignment_id: int) -> Assignment:
    with db.session() as s:
        a = s.get(Assignment, assignment_id)
    if a is None or a.course_id != course_id:
        raise CourseError(404, "assignment_not_found", "There is no such assignment.")
    return a


STAFF = (INSTRUCTOR, ASSISTANT)
