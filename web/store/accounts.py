"""Tables of people and classes: accounts, their server-side sessions, courses with roles per
member, rosters and assignments.

An account owns one visitor row (`visitor_id`): its submissions are that visitor's, so grading,
history and the gradebook work the same for a signed-in student as for an anonymous one. The
session cookie carries only an opaque id; its hash, owner and expiry live here, so signing out or
expiring is a row deleted, not a cookie trusted.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Float, ForeignKey, Integer, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from web.store.base import Base, utcnow

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
    # Set when someone else reset the password (a temporary one they know): every page asks
    # for a new one until it is changed (web.pages.account_settings).
    must_change_password: Mapped[bool] = mapped_column(Boolean, default=False,
                                                       server_default=false())


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


class CourseInvitation(Base):
    """A course's offer to an existing account (added by username, or listed on a roster): the
    account joins, with this role, only when it accepts. A course's staff never enrol an account
    that did not ask, so their role cannot reach an account's other courses."""
    __tablename__ = "course_invitations"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"),
                                            index=True)
    role: Mapped[str] = mapped_column(String(16), default=STUDENT)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    __table_args__ = (UniqueConstraint("course_id", "account_id"),)


class RosterEntry(Base):
    """A student the instructor listed (roster CSV). An account made later with this username
    joins the course as a student; one that existed already is invited (CourseInvitation). The
    name is the course's own word for the student, shown in the course, never the account's."""
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


class ApiToken(Base):
    """A personal token an account made on its account page, for `judge.py submit`: a
    submission sent with it is the account's, as one made in its signed-in page. Only the
    token's hash is kept; it is shown once, when made. Revoking deletes the row."""
    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"),
                                            index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    name: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(nullable=True)


class ProblemPublication(Base):
    """A draft problem (problem.toml `draft = true`, as `judge new` writes it) an instructor
    published before any `judge check` of it passed: students see it from then on. A draft that
    passed a check needs no row (web.http.drafts)."""
    __tablename__ = "problem_publications"
    problem_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    published_by: Mapped[str] = mapped_column(String(64))
    published_at: Mapped[datetime] = mapped_column(default=utcnow)


class LtiContext(Base):
    """An LMS course (LTI 1.3 context) mapped to one of ours: made by its instructor's first
    launch; a student's launch joins the mapped course (the LMS vouches for the enrolment)."""
    __tablename__ = "lti_contexts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    issuer: Mapped[str] = mapped_column(String(300))
    deployment_id: Mapped[str] = mapped_column(String(300))
    context_id: Mapped[str] = mapped_column(String(300))
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    __table_args__ = (UniqueConstraint("issuer", "deployment_id", "context_id"),)


class LtiResource(Base):
    """An LMS resource link mapped to one of our assignments, with the line item its scores go
    to (Assignment and Grade Services), when the LMS gave one."""
    __tablename__ = "lti_resources"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    issuer: Mapped[str] = mapped_column(String(300))
    deployment_id: Mapped[str] = mapped_column(String(300))
    resource_link_id: Mapped[str] = mapped_column(String(300))
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    lineitem_url: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    __table_args__ = (UniqueConstraint("issuer", "deployment_id", "resource_link_id"),)


class LtiScoreSent(Base):
    """The last score sent to the LMS for one student on one resource link (a score is sent
    again only when it changes)."""
    __tablename__ = "lti_scores_sent"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    resource_id: Mapped[int] = mapped_column(ForeignKey("lti_resources.id", ondelete="CASCADE"))
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id", ondelete="CASCADE"))
    score_percent: Mapped[float] = mapped_column(Float)
    sent_at: Mapped[datetime] = mapped_column(default=utcnow)
    __table_args__ = (UniqueConstraint("resource_id", "account_id"),)


class LtiNonce(Base):
    """A launch's state (login initiation to launch, one use) or an id token's nonce (seen once:
    a replayed launch is refused). Rows past `expires_at` are swept."""
    __tablename__ = "lti_nonces"
    value_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(8))          # "state" or "nonce"
    issuer: Mapped[str] = mapped_column(String(300))
    # for a state: the nonce the launch must carry, and the target it was asked for
    nonce: Mapped[str | None] = mapped_column(String(200), nullable=True)
    expires_at: Mapped[datetime] = mapped_column()
