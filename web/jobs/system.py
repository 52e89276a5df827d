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

from huey.consumer import Consumer, ConsumerStopped, Worker
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


class Doorbell:
    """Rung by this process when it enqueues: its idle grading threads look at the queue at
    once. Huey's workers poll a non-blocking storage (the embedded SQLite queue) with a
    back-off that reaches `max_delay`, so without it a submission to an idle server waited
    that long (0.4 s of a 1.4 s grading, measured) before a worker even looked. The poll
    stays, as the backstop for tasks another process enqueued (`judge regrade --db`)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.rings = 0
        self.sleeping = 0  # threads waiting now (a test waits for a worker to be idle)

    def ring(self) -> None:
        with self._cond:
            self.rings += 1
            self._cond.notify_all()

    def wait(self, seen: int, timeout: float) -> bool:
        """Until a ring after `seen` (a count read before the queue was found empty, so a
        ring in between is not missed) or `timeout`; whether it rang."""
        with self._cond:
            self.sleeping += 1
            try:
                return self._cond.wait_for(lambda: self.rings != seen, timeout)
            finally:
                self.sleeping -= 1


class _DoorbellWorker(Worker):
    doorbell: Doorbell
    delay: float
    default_delay: float
    max_delay: float

    def loop(self, now=None):
        self._seen = self.doorbell.rings
        return super().loop(now)

    def sleep(self):
        if self.delay > self.max_delay:
            self.delay = self.max_delay
        if self.stop_flag.is_set() or self.doorbell.wait(self._seen, self.delay):
            self.delay = self.default_delay
        else:
            self.delay *= self.backoff


class _EmbeddedConsumer(Consumer):
    """Huey's consumer without signal handlers, so it can run inside the web server, whose
    workers also wake when the server enqueues (Doorbell)."""

    def __init__(self, huey, doorbell: Doorbell, **kw):
        self.worker_class = type("Worker", (_DoorbellWorker,), {"doorbell": doorbell})
        super().__init__(huey, **kw)

    def _set_signal_handlers(self):
        pass


class JobSystem:
    # An idle worker's look at the queue: first after this long, backing off to at most this
    # long. A backstop only: this process's own enqueues ring the doorbell.
    idle_poll_s: tuple[float, float] = (0.05, 0.5)

    def __init__(self, settings: Settings, db: Database, catalog: ProblemBank, grader: Grader):
        self.settings, self.db, self.catalog, self.grader = settings, db, catalog, grader
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.queue = JobQueue(settings.queue_url, settings.huey_path,
                              handler=self.grade_submission)
        self.huey = self.queue.huey
        self.backend = DbBackend(db, settings, catalog)
        self.consumer: _EmbeddedConsumer | None = None
        self.doorbell = Doorbell()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self.worker_ids: list[str] = []
        self._queue_down = False

    # ------------------------------------------------------------ queueing

    def enqueue(self, submission_id: int, priority: int = LIVE_PRIORITY,
                device: str | None = None) -> None:
        self.queue.enqueue(submission_id, priority, device)
        self.doorbell.ring()  # after the task is stored, so the woken worker finds it

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
            from judge.grading.shards import set_slots
            set_slots(n)  # each grading's hidden suite gets the cores left to one thread
            self.consumer = _EmbeddedConsumer(self.huey, self.doorbell, workers=n,
                                              periodic=False, worker_type="thread",
                                              initial_delay=self.idle_poll_s[0], backoff=1.2,
                                              max_delay=self.idle_poll_s[1],
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
        consumer = self.consumer
        if consumer is None:  # started without grading threads: nothing to supervise
            return
        ts = time.monotonic()
        while not self._stop.is_set():
            try:
                ts = consumer.loop(ts)
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
            self.doorbell.ring()  # a sleeping worker sees the stop flag now
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
