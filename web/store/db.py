"""SQLAlchemy models and the database handle (SQLite by default, any SQLAlchemy URL works).

A submission moves queued -> running -> done. While running it carries a lease (owner, expiry)
that the grading worker renews; an expired lease means the worker died and the submission goes
back to queued. The report is written by one conditional UPDATE that only the lease owner can
win, so it is recorded exactly once.

Besides students' own submissions (kind "live") the table holds the jobs of a regrade (kind
"regrade", low priority, shown to nobody but the instructor until approved) and of a parity
check (kind "parity", which must run on a CUDA worker).
"""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import (
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    create_engine,
    event,
    func,
    select,
    text,
    update,
)
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from judge.judging.vocabulary import Event
from web.store import accounts  # noqa: F401  (its tables are part of the schema)
from web.store.base import Base, utcnow
from web.store.lease import LeaseOwner
from web.store.migrate import add_missing_columns, upgrade
from web.store.news import SubmissionNews

QUEUED, RUNNING, DONE = "queued", "running", "done"
LIVE, REGRADE, PARITY = "live", "regrade", "parity"
LIVE_PRIORITY, REGRADE_PRIORITY = 10, 0   # higher is graded first
# A client address as stored: an IPv6 address with a zone id fits (45 + a short zone name).
ADDRESS_CHARS = 64


def token_hash(token: str) -> str:
    """A token as it is stored (a visitor's, a personal one's): its SHA-256, never the token."""
    return hashlib.sha256(token.encode()).hexdigest()


class Visitor(Base):
    __tablename__ = "visitors"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    display_name: Mapped[str | None] = mapped_column(String(64), nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(default=utcnow)


class Submission(Base):
    __tablename__ = "submissions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    visitor_id: Mapped[int] = mapped_column(ForeignKey("visitors.id"), index=True)
    problem_id: Mapped[str] = mapped_column(String(32), index=True)
    code: Mapped[str] = mapped_column(Text)
    code_sha256: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(8), default=QUEUED)
    verdict: Mapped[str | None] = mapped_column(String(8), nullable=True)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    report_json: Mapped[str | None] = mapped_column(Text, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(200), nullable=True)
    lease_expires_at: Mapped[datetime | None] = mapped_column(nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(nullable=True)
    # live | regrade | parity; the queue priority; the device a worker must have (None: any).
    kind: Mapped[str] = mapped_column(String(16), default=LIVE, server_default=text("'live'"))
    priority: Mapped[int] = mapped_column(Integer, default=LIVE_PRIORITY,
                                          server_default=text(str(LIVE_PRIORITY)))
    requires_device: Mapped[str | None] = mapped_column(String(8), nullable=True)
    # For a regrade job: the regrade and the student's submission it grades again.
    regrade_id: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    regrade_of: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # The worker that stored the report.
    graded_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # Where a student's submission came from: tokens cost nothing to make, addresses do.
    client_address: Mapped[str | None] = mapped_column(String(ADDRESS_CHARS), nullable=True)

    __table_args__ = (Index("ix_submissions_status_id", "status", "id"),)

    @property
    def report(self) -> dict | None:
        return json.loads(self.report_json) if self.report_json else None


class SubmissionEvent(Base):
    """Progress of a grading, in order; the SSE endpoint streams these rows."""
    __tablename__ = "submission_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id"), index=True)
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    type: Mapped[str] = mapped_column(String(32))
    data_json: Mapped[str] = mapped_column(Text, default="{}")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)

    @property
    def data(self) -> dict:
        return json.loads(self.data_json)


class WorkerRow(Base):
    """One grading slot (a thread of the server, or a worker process on another host: one job
    at a time) and what it is doing, for the instructor page."""
    __tablename__ = "workers"
    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(default=utcnow)
    status: Mapped[str] = mapped_column(String(16), default="idle")
    current_submission_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    graded: Mapped[int] = mapped_column(Integer, default=0)
    # embedded (a thread of the server) | remote (`judge worker --server`)
    kind: Mapped[str] = mapped_column(String(16), default="embedded",
                                      server_default=text("'embedded'"))
    host: Mapped[str | None] = mapped_column(String(200), nullable=True)
    device: Mapped[str | None] = mapped_column(String(8), nullable=True)
    gpu_name: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # Which queues it takes jobs from ("any", or "any,cuda" for a CUDA worker), and its software.
    queues: Mapped[str | None] = mapped_column(String(64), nullable=True)
    version: Mapped[str | None] = mapped_column(String(64), nullable=True)


class Regrade(Base):
    """Every student's latest graded submission of a problem, graded again; the new results stay
    hidden until an instructor approves them (status pending -> approved | discarded)."""
    __tablename__ = "regrades"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    problem_id: Mapped[str] = mapped_column(String(32), index=True)
    # The course whose "Regrade all" made it (its students only), or None: the platform's own.
    course_id: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    note: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    decided_at: Mapped[datetime | None] = mapped_column(nullable=True)


class RegradeItem(Base):
    """One student in a regrade: their submission, its verdict before, and the job grading it."""
    __tablename__ = "regrade_items"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    regrade_id: Mapped[int] = mapped_column(ForeignKey("regrades.id"), index=True)
    visitor_id: Mapped[int] = mapped_column(Integer)
    submission_id: Mapped[int] = mapped_column(Integer)      # the student's submission
    job_id: Mapped[int] = mapped_column(Integer)             # the regrade job (a Submission)
    old_verdict: Mapped[str | None] = mapped_column(String(8), nullable=True)
    old_score: Mapped[float | None] = mapped_column(Float, nullable=True)


def engine_url(url: str) -> str:
    """postgres:// and postgresql:// mean the psycopg (3) driver, the one the project installs."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


# Where a session keeps the submissions whose events it added, until it commits.
_NEWS = "submission_news"
# Events that move a submission into, through or out of the queue: the others' positions change.
_QUEUE_EVENTS = frozenset({Event.QUEUED, Event.RUNNING, Event.REQUEUED, Event.DONE})

# Threads that run blocking request work (anyio's default thread limiter) and so may each hold
# one database connection at a time.
THREAD_POOL_SIZE = 40


class Database:
    def __init__(self, url: str):
        self.url = url = engine_url(url)
        kwargs: dict = {}
        sqlite = url.startswith("sqlite")
        path = url.split("///", 1)[1] if sqlite and "///" in url else ""
        if sqlite:
            if path and path != ":memory:":
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": 30}
        # One connection per worker thread of the server (anyio's default limit is 40), so that
        # no request waits for a pooled connection behind the event streams' polls.
        if sqlite and path and path != ":memory:":
            kwargs.update(pool_size=THREAD_POOL_SIZE, max_overflow=0)
        elif not sqlite:  # a database server: also survive its restarts
            kwargs.update(pool_pre_ping=True, pool_size=THREAD_POOL_SIZE, max_overflow=0,
                          pool_recycle=1800)
        self.engine = create_engine(url, **kwargs)
        if url.startswith("sqlite"):
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self.Session = sessionmaker(self.engine, expire_on_commit=False)
        # Streams of this process are woken once the events they follow are committed.
        self.news = SubmissionNews()
        event.listen(self.Session, "after_commit", self._publish_news)
        event.listen(self.Session, "after_rollback", lambda s: s.info.pop(_NEWS, None))

    def create_all(self) -> None:
        """The schema up to date: the Alembic migrations, then any table or column a model has
        without one yet (web.store.migrate)."""
        upgrade(self.engine, Base.metadata)
        Base.metadata.create_all(self.engine)
        add_missing_columns(self.engine, Base.metadata)

    @contextmanager
    def session(self):
        with self.Session() as s:
            yield s

    # ------------------------------------------------------------ queue state

    def queue_position(self, s: Session, sub: Submission) -> int | None:
        """1 + the number of students' submissions queued ahead of this one; None unless queued
        (regrade jobs have a lower priority, so they are never ahead of a live submission)."""
        if sub.status != QUEUED:
            return None
        ahead = s.scalar(select(func.count()).select_from(Submission)
                         .where(Submission.status == QUEUED, Submission.id < sub.id,
                                Submission.kind == (sub.kind or LIVE)))
        return int(ahead or 0) + 1

    def add_event(self, s: Session, submission_id: int, type_: str, data: dict,
                  attempt: int = 0) -> None:
        if type_ == Event.TEST_FINISHED and isinstance(data.get("test"), str):
            self._drop_superseded(s, submission_id, attempt, data["test"])
        s.add(SubmissionEvent(submission_id=submission_id, attempt=attempt, type=type_,
                              data_json=json.dumps(data)))
        news = s.info.setdefault(_NEWS, {"ids": set(), "queue": False})
        news["ids"].add(submission_id)
        news["queue"] = news["queue"] or type_ in _QUEUE_EVENTS

    @staticmethod
    def _drop_superseded(s: Session, submission_id: int, attempt: int, test: str) -> None:
        """A test judged again (a later forged or oversized line about it, a rerun) sends a
        corrected `test_finished`: it replaces the stored one, so a stream replayed from the
        database shows each test's final verdict only, as the Report does. A stream already
        following gets the new row (a later id) and replaces the test's line itself."""
        rows = s.scalars(select(SubmissionEvent).where(
            SubmissionEvent.submission_id == submission_id, SubmissionEvent.attempt == attempt,
            SubmissionEvent.type == Event.TEST_FINISHED)).all()
        for row in rows:
            try:
                same = json.loads(row.data_json).get("test") == test
            except ValueError:
                same = False
            if same:
                s.delete(row)

    def _publish_news(self, s: Session) -> None:
        news = s.info.pop(_NEWS, None)
        if news:
            self.news.publish(news["ids"], queue_changed=news["queue"])

    def claim(self, submission_id: int, owner: str, lease_s: float,
              device: str | None = None) -> Submission | None:
        """Take a queued (or lease-expired running) submission: the row as claimed (`attempts`
        is this attempt's number), or None. With `device`, only a submission that runs anywhere
        or requires that device. Its `running` event is written in the same transaction."""
        now = utcnow()
        with self.session() as s:
            q = update(Submission).where(Submission.id == submission_id)
            if device is not None:
                q = q.where(Submission.requires_device.is_(None)
                            | (Submission.requires_device == device))
            res = s.execute(
                q
                .where((Submission.status == QUEUED)
                       | ((Submission.status == RUNNING) & (Submission.lease_expires_at < now)))
                .values(status=RUNNING, lease_owner=owner,
                        lease_expires_at=now + timedelta(seconds=lease_s), heartbeat_at=now,
                        started_at=now, attempts=Submission.attempts + 1)
                .execution_options(synchronize_session=False))
            if res.rowcount != 1:
                return None
            sub = s.get(Submission, submission_id)
            self.add_event(s, submission_id, Event.RUNNING,
                           {"attempt": sub.attempts, "worker": LeaseOwner.parse(owner).worker},
                           sub.attempts)
            s.commit()
            return sub

    def renew(self, submission_id: int, owner: str, lease_s: float) -> bool:
        now = utcnow()
        with self.session() as s:
            res = s.execute(
                update(Submission)
                .where(Submission.id == submission_id, Submission.status == RUNNING,
                       Submission.lease_owner == owner)
                .values(lease_expires_at=now + timedelta(seconds=lease_s), heartbeat_at=now)
                .execution_options(synchronize_session=False))
            s.commit()
            return res.rowcount == 1

    def holds(self, submission_id: int, owner: str) -> bool:
        """Whether `owner` holds the lease of this running submission."""
        with self.session() as s:
            return s.scalar(select(func.count()).select_from(Submission).where(
                Submission.id == submission_id, Submission.status == RUNNING,
                Submission.lease_owner == owner)) == 1

    def finish(self, submission_id: int, owner: str | None, report: dict, attempt: int) -> bool:
        """Store the report if `owner` still holds the lease (None: any non-done state)."""
        now = utcnow()
        with self.session() as s:
            cond = [Submission.id == submission_id, Submission.status != DONE]
            if owner is not None:
                cond += [Submission.status == RUNNING, Submission.lease_owner == owner]
            worker = LeaseOwner.parse(owner).worker if owner else None
            res = s.execute(
                update(Submission).where(*cond)
                .values(status=DONE, report_json=json.dumps(report),
                        verdict=str(report.get("verdict"))[:8], score=report.get("score"),
                        finished_at=now, lease_owner=None, lease_expires_at=None,
                        graded_by=worker)
                .execution_options(synchronize_session=False))
            if res.rowcount == 1:
                self.add_event(s, submission_id, Event.DONE,
                               {"verdict": report.get("verdict"), "score": report.get("score")},
                               attempt)
            s.commit()
            return res.rowcount == 1

    def requeue_expired(self) -> list[int]:
        """Running submissions whose lease ran out go back to queued; their ids."""
        now = utcnow()
        with self.session() as s:
            ids = list(s.scalars(select(Submission.id).where(
                Submission.status == RUNNING, Submission.lease_expires_at < now)))
            requeued = []
            for sid in ids:
                res = s.execute(
                    update(Submission)
                    .where(Submission.id == sid, Submission.status == RUNNING,
                           Submission.lease_expires_at < now)
                    .values(status=QUEUED, lease_owner=None, lease_expires_at=None)
                    .execution_options(synchronize_session=False))
                if res.rowcount == 1:
                    requeued.append(sid)
                    self.add_event(s, sid, Event.REQUEUED,
                                   {"reason": "the worker grading it stopped answering"})
            s.commit()
            return requeued

    def queued_ids(self) -> list[int]:
        with self.session() as s:
            return list(s.scalars(select(Submission.id).where(Submission.status == QUEUED)
                                  .order_by(Submission.id)))

    def queued_jobs(self) -> list[tuple[int, int, str | None]]:
        """(id, priority, required device) of every queued submission, oldest first."""
        with self.session() as s:
            return [(i, p if p is not None else LIVE_PRIORITY, d) for i, p, d in s.execute(
                select(Submission.id, Submission.priority, Submission.requires_device)
                .where(Submission.status == QUEUED).order_by(Submission.id))]


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
