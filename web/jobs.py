"""Grading jobs: a Huey task per submission, leases with a heartbeat, recovery, the worker pool.

The database row is the truth; the Huey queue (SQLite storage in the data directory) only says
"look at submission N". A task claims its submission with a conditional UPDATE (queued, or
running with an expired lease -> running, owned by this worker), renews the lease from a
heartbeat thread while `grade()` runs, and stores the report with a second conditional UPDATE
that only the current lease owner can win. So a duplicate task does nothing, a worker that died
mid-job loses its lease and the submission is graded again by another, and the report is
recorded exactly once.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import traceback
import uuid

from huey import SqliteHuey
from huey.consumer import Consumer, ConsumerStopped
from sqlalchemy import select, update

from .db import DONE, QUEUED, RUNNING, Database, Submission, WorkerRow, utcnow
from .grading import Grader, internal_error_report
from .problems import Catalog
from .settings import Settings

log = logging.getLogger(__name__)
HOST = socket.gethostname()


class _EmbeddedConsumer(Consumer):
    """Huey's consumer without signal handlers, so it can run inside the web server."""

    def _set_signal_handlers(self):
        pass


class _Heartbeat(threading.Thread):
    def __init__(self, db: Database, submission_id: int, owner: str, settings: Settings):
        super().__init__(name=f"heartbeat-{submission_id}", daemon=True)
        self.db, self.sid, self.owner, self.settings = db, submission_id, owner, settings
        self.stopped = threading.Event()
        self.lost = False

    def run(self):
        while not self.stopped.wait(self.settings.heartbeat_s):
            try:
                if not self.db.renew(self.sid, self.owner, self.settings.lease_s):
                    self.lost = True
                    log.warning("submission %s: lease lost, its result will be dropped", self.sid)
                    return
            except Exception:  # a busy database: try again next beat
                log.exception("heartbeat for submission %s failed", self.sid)


class JobSystem:
    def __init__(self, settings: Settings, db: Database, catalog: Catalog, grader: Grader):
        self.settings, self.db, self.catalog, self.grader = settings, db, catalog, grader
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.huey = SqliteHuey(name="kvpractice", filename=str(settings.huey_path),
                               results=False, utc=True, timeout=30)
        self._task = self.huey.task(name="grade_submission")(self.grade_submission)
        self.consumer: _EmbeddedConsumer | None = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self.worker_ids: list[str] = []

    # ------------------------------------------------------------ queueing

    def enqueue(self, submission_id: int) -> None:
        self._task(submission_id)

    def pending_count(self) -> int:
        try:
            return int(self.huey.pending_count())
        except Exception:
            return -1

    def recover(self) -> list[int]:
        """At start-up: free leases of dead local workers and expired ones, queue every queued."""
        self._release_dead_local_leases()
        self.db.requeue_expired()
        ids = self.db.queued_ids()
        try:
            pending = {t.args[0] for t in self.huey.pending() if t.args}
        except Exception:
            pending = set()
        for sid in ids:
            if sid not in pending:
                self.enqueue(sid)
        return ids

    def _release_dead_local_leases(self) -> None:
        """Running rows owned by a process on this host that no longer exists: back to queued."""
        with self.db.session() as s:
            rows = s.execute(select(Submission.id, Submission.lease_owner)
                             .where(Submission.status == RUNNING)).all()
        for sid, owner in rows:
            host, _, rest = (owner or "").partition(":")
            pid = rest.split(":", 1)[0]
            if host != HOST or not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
                continue
            with self.db.session() as s:
                s.execute(update(Submission)
                          .where(Submission.id == sid, Submission.lease_owner == owner)
                          .values(lease_expires_at=utcnow())
                          .execution_options(synchronize_session=False))
                s.commit()

    def reap_once(self) -> None:
        """Re-queue submissions whose worker died; make sure every queued one has a task."""
        for sid in self.db.requeue_expired():
            log.warning("submission %s: its worker stopped answering; queued again", sid)
            self.enqueue(sid)
        queued = self.db.queued_ids()
        if queued:
            try:
                pending = {t.args[0] for t in self.huey.pending() if t.args}
            except Exception:
                return
            for sid in queued:
                if sid not in pending:
                    self.enqueue(sid)

    # ------------------------------------------------------------ the task

    def grade_submission(self, submission_id: int) -> str:
        """Grade one submission, if it is still waiting; what happened, in one word."""
        thread = threading.current_thread().name
        worker_id = f"{HOST}:{os.getpid()}:{thread}"
        owner = f"{worker_id}:{uuid.uuid4().hex[:8]}"
        attempt = self.db.claim(submission_id, owner, self.settings.lease_s)
        if attempt is None:
            return "skipped"
        with self.db.session() as s:
            sub = s.get(Submission, submission_id)
            problem_id, code = sub.problem_id, sub.code
            self.db.add_event(s, submission_id, "running",
                              {"attempt": attempt, "worker": worker_id}, attempt)
            s.commit()
        self._worker_status(worker_id, "grading", submission_id)

        problem = self.catalog.get(problem_id)
        if attempt > self.settings.max_attempts:
            report = internal_error_report(
                problem or _MissingProblem(problem_id),
                f"grading stopped {attempt - 1} times without finishing (the worker died or "
                "was killed each time); not retrying")
            self.db.finish(submission_id, owner, report, attempt)
            self._worker_status(worker_id, "idle", None, graded=True)
            return "gave-up"

        beat = _Heartbeat(self.db, submission_id, owner, self.settings)
        beat.start()

        def on_event(ev: dict) -> None:
            if beat.lost or not isinstance(ev, dict) or ev.get("type") == "done":
                return  # the stored "done" event is written together with the report
            try:
                with self.db.session() as s:
                    self.db.add_event(s, submission_id, str(ev.get("type", "event")), ev, attempt)
                    s.commit()
            except Exception:
                log.exception("could not store an event of submission %s", submission_id)

        try:
            if problem is None:
                report = internal_error_report(_MissingProblem(problem_id),
                                               f"problem {problem_id} is no longer on the server")
            else:
                report = self.grader(problem, code, on_event)
                if not isinstance(report, dict) or "verdict" not in report:
                    report = internal_error_report(problem, "the grader returned no report")
                json.dumps(report)  # must be storable
        except Exception as exc:
            log.exception("grading submission %s failed", submission_id)
            report = internal_error_report(
                problem or _MissingProblem(problem_id),
                f"the grader failed: {type(exc).__name__}: {exc}\n"
                + traceback.format_exc(limit=8)[-3000:])
        finally:
            beat.stopped.set()
        stored = self.db.finish(submission_id, owner, report, attempt)
        self._worker_status(worker_id, "idle", None, graded=stored)
        if not stored:
            log.warning("submission %s: another worker owns it now; this result is dropped",
                        submission_id)
        return "stored" if stored else "dropped"

    # ------------------------------------------------------------ workers

    def start_workers(self, n: int) -> None:
        """Start `n` grading threads (Huey's consumer) and the lease reaper in this process."""
        self._stop.clear()
        self.recover()
        if n > 0:
            self.consumer = _EmbeddedConsumer(self.huey, workers=n, periodic=False,
                                              worker_type="thread", initial_delay=0.05,
                                              backoff=1.2, max_delay=0.5,
                                              check_worker_health=True, health_check_interval=5)
            self.worker_ids = [f"{HOST}:{os.getpid()}:Worker-{i + 1}" for i in range(n)]
            for wid in self.worker_ids:
                self._worker_status(wid, "idle", None, started=True)
            self.consumer.start()
            self._spawn(self._supervise, "huey-supervisor")
        self._spawn(self._reaper, "lease-reaper")

    def _spawn(self, target, name):
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def _supervise(self) -> None:
        ts = None
        import time
        ts = time.monotonic()
        while not self._stop.is_set():
            try:
                ts = self.consumer.loop(ts)
            except ConsumerStopped:
                return
            except Exception:
                log.exception("worker pool supervisor")

    def _reaper(self) -> None:
        while not self._stop.wait(self.settings.reaper_interval_s):
            try:
                self.reap_once()
                self._beat_workers()
            except Exception:
                log.exception("lease reaper")

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self.consumer is not None:
            self.consumer.stop_flag.set()
            for _, t in self.consumer.worker_threads:
                t.join(timeout)
        for wid in self.worker_ids:
            self._worker_status(wid, "stopped", None)
        for t in self._threads:
            t.join(timeout)
        self._threads.clear()
        self.consumer = None

    def _beat_workers(self) -> None:
        if not self.worker_ids:
            return
        with self.db.session() as s:
            s.execute(update(WorkerRow).where(WorkerRow.id.in_(self.worker_ids))
                      .values(heartbeat_at=utcnow())
                      .execution_options(synchronize_session=False))
            s.commit()

    def _worker_status(self, wid: str, status: str, sid: int | None, graded: bool = False,
                       started: bool = False) -> None:
        try:
            with self.db.session() as s:
                row = s.get(WorkerRow, wid)
                if row is None:
                    row = WorkerRow(id=wid, graded=0)
                    s.add(row)
                if started:
                    row.started_at = utcnow()
                row.status, row.current_submission_id = status, sid
                row.heartbeat_at = utcnow()
                if graded:
                    row.graded = (row.graded or 0) + 1
                s.commit()
        except Exception:
            log.exception("worker table update failed")


class _MissingProblem:
    def __init__(self, pid):
        self.id, self.slug = pid, None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


__all__ = ["JobSystem", "QUEUED", "RUNNING", "DONE"]
