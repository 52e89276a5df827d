"""Tables of people and classes: accounts, their server-side sessions, courses with roles per
member, rosters and assignments.

An account owns one visitor row (`visitor_id`): its submissions are that visitor's, so grading,
history and the gradebook work the same for a signed-in student as for an anonymous one. The
session cookie carries only an opaque id; its hash, owner and expiry live here, so signing out or
expiring is a row deleted, not a cookie trusted.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from web.store.db import Base, utcnow

INSTRUCTOR, ASSISTANT, STUDENT = "instructor", "assistant", "student"
ROLES = (INSTRUCTOR, ASSISTANT, STUDENT)
BEST, LAST = "best", "last"


class Account(Base):
    __tablename__ = "accounts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # The sign-in name: a student ID for a class, lower case.
    username: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    display_name: Mapped[str] = mapped_column(String(64))
    # argon2id hash; None for an account that signs in only through OIDC.
    password_hash: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # May create courses and see the whole platform's instructor page.
    is_staff: Mapped[bool] = mapped_column(Boolean, default=False)
    visitor_id: Mapped[int] = mapped_column(ForeignKey("visitors.id"), unique=True)
    # "issuer|subject" of an OIDC identity, when the account came from one.
    oidc_subject: Mapped[str | None] = mapped_column(String(400), nullable=True, unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class AuthSession(Base):
    __tablename__ = "auth_sessions"
    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    # None: a session opened with the instructor token (scripts' bootstrap), staff by itself.
    account_id: Mapped[int | None] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"),
                                                   nullable=True, index=True)
    is_staff: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column()


class Course(Base):
    __tablename__ = "courses"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(200))
    join_code: Mapped[str] = mapped_column(String(32), unique=True, index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Membership(Base):
    __tablename__ = "memberships"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"),
                                           index=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"),
                                            index=True)
    role: Mapped[str] = mapped_column(String(16), default=STUDENT)
    __table_args__ = (UniqueConstraint("course_id", "account_id"),)


class RosterEntry(Base):
    """A student the instructor listed (roster CSV): the account whose username is this student
    ID joins the course as a student, under this name, when it signs in."""
    __tablename__ = "roster_entries"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"),
                                           index=True)
    student_id: Mapped[str] = mapped_column(String(64))
    name: Mapped[str] = mapped_column(String(64))
    __table_args__ = (UniqueConstraint("course_id", "student_id"),)


class Assignment(Base):
    __tablename__ = "assignments"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"),
                                           index=True)
    title: Mapped[str] = mapped_column(String(200))
    # Problem ids, comma-separated, in the order the students see them.
    problems: Mapped[str] = mapped_column(Text)
    # Naive UTC, as every time in this database.
    opens_at: Mapped[datetime] = mapped_column()
    deadline: Mapped[datetime] = mapped_column()
    late_until: Mapped[datetime | None] = mapped_column(nullable=True)
    # Fraction of the score a late submission loses (0.2: a late AC counts 80 %).
    late_penalty: Mapped[float] = mapped_column(Float, default=0.0)
    rule: Mapped[str] = mapped_column(String(8), default=BEST)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    @property
    def problem_ids(self) -> list[str]:
        return [p for p in self.problems.split(",") if p]
