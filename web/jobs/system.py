"""Grading jobs on the server: the queue, recovery from the database, the lease reaper, and
(in embedded mode) the worker pool.

The database row is the truth; the queue (`web.jobs.queue`: SQLite in the data directory, or Redis in
distributed mode) only says "look at submission N". How one job is graded (claim, lease with a
heartbeat, exactly-once report) is `web.jobs.runner.run_job`, shared with the workers on other
hosts. The reaper re-queues submissions whose lease ran out (their worker died) and re-fills the
queue with every queued submission it lacks (after a restart, or when Redis lost its data).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

from huey.consumer import Consumer, ConsumerStopped
from sqlalchemy import select, update

from judge.grading.workdir import pid_alive
from judge.problem import ProblemBank
from web.jobs import worker_table as workers
from web.jobs.graders import Grader
from web.jobs.queue import JobQueue
from web.jobs.runner import DbBackend, run_job
from web.settings import Settings
from web.store.db import DONE, LIVE_PRIORITY, QUEUED, RUNNING, Database, Submission, utcnow
from web.store.lease import LeaseOwner, WorkerId

log = logging.getLogger(__name__)
HOST = socket.gethostname()


class _EmbeddedConsumer(Consumer):
    """Huey's consumer without signal handlers, so it can run inside the web server."""

    def _set_signal_handlers(self):
        pass


class JobSystem:
    def __init__(self, settings: Settings, db: Database, catalog: ProblemBank, grader: Grader):
        self.settings, self.db, self.catalog, self.grader = settings, db, catalog, grader
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.queue = JobQueue(settings.queue_url, settings.huey_path,
                              handler=self.grade_submission)
        self.huey = self.queue.huey
        self.backend = DbBackend(db, settings, catalog)
        self.consumer: _EmbeddedConsumer | None = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self.worker_ids: list[str] = []
        self._queue_down = False

    # ------------------------------------------------------------ queueing

    def enqueue(self, submission_id: int, priority: int = LIVE_PRIORITY,
                device: str | None = None) -> None:
        self.queue.enqueue(submission_id, priority, device)

    def pending_count(self) -> int:
        return self.queue.pending_count()

    def recover(self) -> list[int]:
        """At start-up: free leases of dead local workers and expired ones, queue every queued."""
        self._release_dead_local_leases()
        self.db.requeue_expired()
        self.fill_queue()
        return self.db.queued_ids()

    def fill_queue(self) -> int:
        """Enqueue every queued submission that has no task waiting; how many were enqueued."""
        jobs = self.db.queued_jobs()
        if not jobs:
            return 0
        try:
            pending = self.queue.pending_ids()
            n = 0
            for sid, priority, device in jobs:
                if sid not in pending:
                    self.enqueue(sid, priority, device)
                    n += 1
        except Exception as exc:
            if not self._queue_down:
                log.warning("the grading queue (%s) does not answer: %s: %s; the submissions "
                            "stay queued in the database and are queued again when it is back",
                            self.queue.kind, type(exc).__name__, exc)
            self._queue_down = True
            return 0
        if self._queue_down:
            log.warning("the grading queue answers again; %d submission(s) queued again", n)
        self._queue_down = False
        return n

    def _release_dead_local_leases(self) -> None:
        """Running rows owned by a process on this host that no longer exists: back to queued."""
        with self.db.session() as s:
            rows = s.execute(select(Submission.id, Submission.lease_owner)
                             .where(Submission.status == RUNNING)).all()
        for sid, owner in rows:
            worker = LeaseOwner.parse(owner or "").worker_id
            if worker.host != HOST or worker.pid is None or worker.pid == os.getpid() \
                    or pid_alive(worker.pid):
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
        self.fill_queue()

    # ------------------------------------------------------------ the task

    def grade_submission(self, submission_id: int) -> str:
        """Grade one submission, if it is still waiting; what happened, in one word."""
        worker_id = str(WorkerId(HOST, os.getpid(), threading.current_thread().name))
        return run_job(self.backend, self.catalog, self.grader, submission_id, worker_id,
                       self.settings.heartbeat_s)

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
            device = _local_device()
            for wid in self.worker_ids:
                workers.register(self.db, wid, kind="embedded", host=HOST, device=device)
            self.consumer.start()
            self._spawn(self._supervise, "huey-supervisor")
        self._spawn(self._reaper, "lease-reaper")

    def _spawn(self, target, name):
        t = threading.Thread(target=target, name=name, daemon=True)
        t.start()
        self._threads.append(t)

    def _supervise(self) -> None:
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
        try:
            workers.stopped(self.db, self.worker_ids)
        except Exception:
            log.exception("worker table update failed")
        for t in self._threads:
            t.join(timeout)
        self._threads.clear()
        self.consumer = None

    def _beat_workers(self) -> None:
        workers.beat(self.db, self.worker_ids)


def _local_device() -> str:
    """The device the grading core picks here ("auto")."""
    try:
        from judge.grading.environment import cuda_available
        return "cuda" if cuda_available() else "cpu"
    except Exception:
        return "cpu"


__all__ = ["JobSystem", "QUEUED", "RUNNING", "DONE"]
