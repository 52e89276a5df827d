"""What may be done to a course, by whom. Every function takes the acting account's role in the
course (`role_in`), so a page cannot forget to ask: a non-member gets "no such course"."""

from __future__ import annotations

import csv
import io
import secrets
from datetime import datetime, timezone

from sqlalchemy import select
from sqlalchemy.orm import aliased

from web.dates import parse_local
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
    CourseInvitation,
    Membership,
    RosterEntry,
)

MAX_ROSTER_ROWS = 2000
# Join codes are read off a projector and typed on phones: no letter that looks like another
# (no I/L/1, no O/0), one case, six characters (31**6, about 9e8; wrong codes are throttled per
# account and per address, so guessing one costs years).
JOIN_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
JOIN_CODE_LENGTH = 6
MAX_CODE_TEXT = 32


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
        c = Course(title=title, join_code=new_join_code(s))
        s.add(c)
        s.flush()
        if account is not None:
            s.add(Membership(course_id=c.id, account_id=account.id, role=INSTRUCTOR))
        s.commit()
        return c


def new_join_code(s) -> str:
    while True:  # a clash is one in 9e8 per course: another draw
        code = "".join(secrets.choice(JOIN_ALPHABET) for _ in range(JOIN_CODE_LENGTH))
        if s.scalar(select(Course.id).where(Course.join_code == code)) is None:
            return code


def normal_code(text: str) -> str:
    """A typed code as stored: upper case, spaces and dashes dropped (`k7m-q4p` is K7MQ4P)."""
    return "".join(ch for ch in (text or "")[:MAX_CODE_TEXT].upper() if ch.isalnum())


def course_by_code(db, code: str) -> Course | None:
    """The course of a typed join code: its normal form, else (a course made before codes
    were case-free) exactly as typed."""
    raw = (code or "").strip()[:MAX_CODE_TEXT]
    with db.session() as s:
        c = s.scalar(select(Course).where(Course.join_code == normal_code(raw)))
        return c if c is not None or not raw else s.scalar(
            select(Course).where(Course.join_code == raw))


def is_member(db, course_id: int, account: Account) -> bool:
    with db.session() as s:
        return s.scalar(select(Membership.id).where(Membership.course_id == course_id,
                                                    Membership.account_id == account.id)) \
            is not None


def join(db, account: Account, code: str) -> Course:
    c = course_by_code(db, code)
    if c is None:
        raise CourseError(404, "bad_join_code", "No course has that join code.")
    with db.session() as s:
        if s.scalar(select(Membership.id).where(Membership.course_id == c.id,
                                                Membership.account_id == account.id)) is None:
            s.add(Membership(course_id=c.id, account_id=account.id, role=STUDENT))
            s.commit()
        return c


def members(db, course_id: int) -> list[dict]:
    """The course's members; `roster_name` is what this course's roster calls them (the
    course's own word, never written onto the account)."""
    with db.session() as s:
        return [{"account": a.id, "username": a.username, "display_name": a.display_name,
                 "roster_name": name, "role": r, "visitor_id": a.visitor_id}
                for a, r, name in s.execute(
            select(Account, Membership.role, RosterEntry.name)
            .join(Membership, Membership.account_id == Account.id)
            .outerjoin(RosterEntry, (RosterEntry.course_id == course_id)
                       & (RosterEntry.student_id == Account.username))
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


def add_member(db, course_id: int, actor_role: str, username: str, role: str) -> str:
    """A member's role changed ("changed"), or an existing account invited ("invited"): an
    account joins only when it accepts, so a course's staff reach no account that did not ask."""
    require(actor_role, INSTRUCTOR)
    if role not in ROLES:
        raise CourseError(422, "bad_role", "A role is instructor, assistant or student.")
    with db.session() as s:
        a = s.scalar(select(Account).where(Account.username == (username or "").strip().lower()))
        if a is None:
            raise CourseError(404, "no_such_account", "No account has that username.")
        member = s.scalar(select(Membership.id).where(Membership.course_id == course_id,
                                                      Membership.account_id == a.id))
        aid = a.id
    if member is not None:
        set_role(db, course_id, actor_role, aid, role)
        return "changed"
    invite(db, course_id, aid, role)
    return "invited"


def invite(db, course_id: int, account_id: int, role: str = STUDENT) -> None:
    """Offer the course to an account (a second offer replaces the first's role)."""
    with db.session() as s:
        found = s.scalar(select(CourseInvitation).where(
            CourseInvitation.course_id == course_id, CourseInvitation.account_id == account_id))
        if found is None:
            s.add(CourseInvitation(course_id=course_id, account_id=account_id, role=role))
        else:
            found.role = role
        s.commit()


def invitations_for(db, account: Account | None) -> list[dict]:
    """The courses that invite this account, and as what."""
    if account is None:
        return []
    with db.session() as s:
        return [{"course": c, "role": r} for c, r in s.execute(
            select(Course, CourseInvitation.role)
            .join(CourseInvitation, CourseInvitation.course_id == Course.id)
            .where(CourseInvitation.account_id == account.id).order_by(Course.id))]


def pending_invitations(db, course_id: int) -> list[dict]:
    """Who this course invited and has not answered yet (the staff's page)."""
    with db.session() as s:
        return [{"username": u, "display_name": n, "role": r, "roster_name": rn}
                for u, n, r, rn in s.execute(
            select(Account.username, Account.display_name, CourseInvitation.role,
                   RosterEntry.name)
            .join(CourseInvitation, CourseInvitation.account_id == Account.id)
            .outerjoin(RosterEntry, (RosterEntry.course_id == course_id)
                       & (RosterEntry.student_id == Account.username))
            .where(CourseInvitation.course_id == course_id).order_by(Account.username))]


def answer_invitation(db, course_id: int, account: Account, accept: bool) -> None:
    """The invited account itself accepts (joins with the offered role) or declines."""
    with db.session() as s:
        inv = s.scalar(select(CourseInvitation).where(
            CourseInvitation.course_id == course_id, CourseInvitation.account_id == account.id))
        if inv is None:
            raise CourseError(404, "no_invitation", "There is no invitation to this course "
                              "for you.")
        member = s.scalar(select(Membership).where(Membership.course_id == course_id,
                                                   Membership.account_id == account.id))
        if accept and member is None:
            s.add(Membership(course_id=course_id, account_id=account.id, role=inv.role))
        elif accept:
            member.role = inv.role
        s.delete(inv)
        s.commit()


def member_account(db, course_id: int, account_id: int) -> Account:
    with db.session() as s:
        a = s.scalar(select(Account).join(Membership, Membership.account_id == Account.id)
                     .where(Membership.course_id == course_id, Account.id == account_id))
    if a is None:
        raise CourseError(404, "not_a_member", "That account is not in this course.")
    return a


def load_roster(db, course_id: int, actor_role: str, text: str) -> int:
    """Rows "student_id,name" (a header row is skipped). Each is kept as the course's roster
    entry; an account that has the username already is invited, one made later is invited when
    it is made (web.accounts.service). Nobody is enrolled or renamed: the name stays the course's.
    How many rows were read."""
    require(actor_role, INSTRUCTOR)
    rows = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
    if rows and rows[0][0].strip().lower() in ("student_id", "id", "student id"):
        rows = rows[1:]
    if len(rows) > MAX_ROSTER_ROWS:
        raise CourseError(413, "roster_too_long", "A roster has at most 2000 rows.")
    n, invited = 0, []
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
            a = s.scalar(select(Account.id).where(Account.username == sid))
            if a is not None and s.scalar(select(Membership.id).where(
                    Membership.course_id == course_id, Membership.account_id == a)) is None:
                invited.append(a)
            n += 1
        s.commit()
    for account_id in invited:
        if not _invited(db, course_id, account_id):  # keep a role offered by name
            invite(db, course_id, account_id, STUDENT)
    return n


def _invited(db, course_id: int, account_id: int) -> bool:
    with db.session() as s:
        return s.scalar(select(CourseInvitation.id).where(
            CourseInvitation.course_id == course_id,
            CourseInvitation.account_id == account_id)) is not None


def reset_target(db, course_id: int, account_id: int, actor: Account | None,
                 actor_staff: bool) -> Account:
    """The member whose password `actor` may reset: someone who holds staff rights over every
    course the account belongs to (instructor in each; platform staff hold them everywhere),
    and never a platform staff account unless the actor is platform staff too. A temporary
    password is the account itself, so a role in one course must not reach its others."""
    target = member_account(db, course_id, account_id)
    if actor is not None and actor.id == account_id:
        raise CourseError(409, "reset_yourself", "Your own password is changed on your account "
                          "page, with the current one.")
    if actor_staff:
        return target
    if target.is_staff or actor is None or account_id not in resettable(
            db, course_id, actor, False):
        raise CourseError(403, "reset_not_allowed", "Only someone who teaches every course of "
                          "this account may reset its password, and a platform staff "
                          "account's only platform staff.")
    return target


def resettable(db, course_id: int, actor: Account | None, actor_staff: bool) -> set[int]:
    """The ids of this course's members whose password `actor` may reset (see reset_target)."""
    with db.session() as s:
        ids = set(s.scalars(select(Membership.account_id)
                            .where(Membership.course_id == course_id)))
        if actor is not None:  # one's own password is changed on the account page
            ids.discard(actor.id)
        if actor_staff:
            return ids
        if actor is None:
            return set()
        taught = select(Membership.course_id).where(Membership.account_id == actor.id,
                                                    Membership.role == INSTRUCTOR)
        # members with a course the actor does not teach, and platform staff: not theirs
        beyond = set(s.scalars(select(Membership.account_id).where(
            Membership.account_id.in_(ids), Membership.course_id.not_in(taught))))
        staff = set(s.scalars(select(Account.id).where(Account.id.in_(ids),
                                                       Account.is_staff.is_(True))))
    return ids - beyond - staff


BAD_TIME = "A time is written as the form shows it (2 Dec 2026 23:59) or in ISO 8601 " \
    "(2026-12-02T23:59)."


def parse_time(value: str, tz_offset_min: int = 0, zone=None) -> datetime | None:
    """A form's time (web.dates: the pages' own form, or ISO 8601) in the form's `zone`
    (its IANA name, sent by the page), else `tz_offset_min` minutes east of UTC, unless the text
    names its own offset; as naive UTC. None for an empty value."""
    from datetime import timedelta

    if not (value or "").strip():
        return None
    dt = parse_local(value, zone or timezone(timedelta(minutes=tz_offset_min)))
    if dt is None:
        raise CourseError(422, "bad_time", BAD_TIME)
    return dt


def create_assignment(db, catalog, course_id: int, actor_role: str, title: str,
                      problems: list[str], opens_at: datetime, deadline: datetime,
                      late_until: datetime | None, late_penalty: float, rule: str,
                      published=lambda p: True) -> Assignment:
    """`published(problem)`: whether students may see it (a draft they may not: it would be
    set as homework nobody can open, or that grades IE)."""
    require(actor_role, INSTRUCTOR)
    ids = []
    for ref in problems:
        p = catalog.get(ref.strip())
        if p is None:
            raise CourseError(404, "unknown_problem", f"There is no problem '{ref.strip()}'.")
        if not published(p):
            raise CourseError(409, "draft_problem", "A draft problem cannot be set: students "
                              "see it once `judge check` passes or an instructor publishes it.")
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


def course_staff_sees(db, viewer, visitor_id: int) -> bool:
    """Whether `viewer` is instructor or assistant of a course `visitor_id`'s account is a
    student of (so may read that student's submissions)."""
    if viewer is None:
        return False
    mine, theirs = aliased(Membership), aliased(Membership)
    with db.session() as s:
        return s.scalar(
            select(theirs.id).join(Account, Account.id == theirs.account_id)
            .join(mine, mine.course_id == theirs.course_id)
            .where(Account.visitor_id == visitor_id, theirs.role == STUDENT,
                   mine.account_id == viewer.id, mine.role.in_(STAFF)).limit(1)) is not None
