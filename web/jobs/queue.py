"""The grading queue: Huey tasks that each say "look at submission N".

Two Huey storages, chosen by `Settings.queue_url`:

- embedded (default): SqliteHuey in the data directory; the server's own threads consume it.
- distributed (`redis://HOST:PORT/N`): PriorityRedisHuey, so that workers on other machines
  (`judge worker --queue ... --server ...`) consume it. Live submissions are enqueued with a
  higher priority than regrade jobs, so a deadline rush is never stuck behind a regrade.

Each storage has two queues: "any" (every worker takes from it) and "cuda" (only workers with a
CUDA device do: parity checks). The queue holds no state of its own that matters: the database
is the truth, and `JobSystem.reap_once` re-fills the queue from it (e.g. after Redis lost its
data), so a lost or duplicated task costs nothing but a little time.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from huey import PriorityRedisHuey, SqliteHuey

from web.store.db import LIVE_PRIORITY

log = logging.getLogger(__name__)

QUEUES = ("any", "cuda")
TASK_NAME = "grade_submission"
# The task's registry key is "<module>.<name>"; kept as it was before the queue moved here, so
# tasks already in an embedded queue's file stay readable.
TASK_MODULE = "web.jobs.system"
HUEY_NAME = "kvpractice"


def queue_for(device: str | None) -> str:
    return "cuda" if device == "cuda" else "any"


def redact_url(url: str | None) -> str:
    """The URL without a password, for messages."""
    if not url or "@" not in url:
        return url or ""
    scheme, _, rest = url.partition("://")
    creds, _, host = rest.rpartition("@")
    if ":" not in creds and scheme.startswith(("postgres", "redis")) and creds:
        return url  # a user name without a password
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user + ':***@' if user else '***@'}{host}"


def _redis_huey(name: str, url: str, read_timeout: float, blocking: bool):
    from redis import ConnectionPool

    # A read must wait longer than the blocking pop (read_timeout); a dead server is noticed
    # within seconds, and the caller's backoff takes it from there.
    pool = ConnectionPool.from_url(url, socket_connect_timeout=3,
                                   socket_timeout=read_timeout + 5, health_check_interval=10)
    return PriorityRedisHuey(name, connection_pool=pool, results=False, utc=True,
                             blocking=blocking, read_timeout=read_timeout)


class JobQueue:
    """The "any" and "cuda" queues of one storage, each with the grading task registered.

    `handler(submission_id)` runs when a worker executes a task; a process that only enqueues
    (the web server in distributed mode) needs none.
    """

    def __init__(self, url: str | None = None, sqlite_path: Path | None = None,
                 handler: Callable[[int], str] | None = None, read_timeout: float = 1.0):
        self.url = url
        self._handler = handler
        if url:
            if not url.startswith(("redis://", "rediss://", "unix://")):
                raise ValueError(f"--queue must be a redis:// URL, not {redact_url(url)!r}")
            # The "cuda" queue is only ever peeked at (a GPU worker then waits on "any").
            self.hueys = {q: _redis_huey(HUEY_NAME if q == "any" else f"{HUEY_NAME}_{q}",
                                         url, read_timeout, blocking=(q == "any"))
                          for q in QUEUES}
        else:
            if sqlite_path is None:
                raise ValueError("the embedded queue needs a file")
            sqlite_path.parent.mkdir(parents=True, exist_ok=True)
            self.hueys = {q: SqliteHuey(name=HUEY_NAME if q == "any" else f"{HUEY_NAME}_{q}",
                                        filename=str(sqlite_path), results=False, utc=True,
                                        timeout=30) for q in QUEUES}
        self.tasks = {}
        for q, huey in self.hueys.items():
            def grade_submission(submission_id: int, _q=q) -> str:
                if self._handler is None:
                    raise RuntimeError("this process only enqueues grading jobs")
                return self._handler(submission_id)
            grade_submission.__module__ = TASK_MODULE
            self.tasks[q] = huey.task(name=TASK_NAME)(grade_submission)

    @property
    def kind(self) -> str:
        return "redis" if self.url else "sqlite"

    @property
    def huey(self):
        """The "any" queue's Huey (what the embedded consumer runs)."""
        return self.hueys["any"]

    def enqueue(self, submission_id: int, priority: int = LIVE_PRIORITY,
                device: str | None = None) -> None:
        q = queue_for(device)
        self.hueys[q].enqueue(self.tasks[q].s(submission_id, priority=priority))

    def pending_ids(self) -> set[int]:
        """Submission ids with a task waiting in some queue. Raises when the storage is down."""
        out: set[int] = set()
        for huey in self.hueys.values():
            for data in huey.storage.enqueued_items():
                try:
                    task = huey.deserialize_task(data)
                except Exception:  # a task of another version: it will be skipped when run
                    continue
                if task.args:
                    out.add(task.args[0])
        return out

    def pending_count(self) -> int:
        try:
            return sum(int(h.pending_count()) for h in self.hueys.values())
        except Exception:
            return -1

    def dequeue(self, queues: tuple[str, ...] = ("any",)):
        """(queue, task) of the first queue in `queues` that has a task, or None (after a short
        blocking wait on "any"). Raises when the storage is unreachable (the caller backs off)."""
        for q in sorted(queues, key=lambda q: q == "any"):  # "any" (blocking) last
            task = self.hueys[q].dequeue()
            if task is not None:
                return q, task
        return None

    def execute(self, queue: str, task):
        return self.hueys[queue].execute(task)

    def ping(self) -> None:
        """Raises unless the storage answers."""
        storage = self.huey.storage
        if hasattr(storage, "conn"):
            storage.conn.ping()
        else:
            storage.queue_size()
