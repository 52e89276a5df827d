"""Wake-ups for the event streams of this process when a submission's events are committed.

The database stays the record: a stream always reads its events from the rows. This only tells
a waiting stream *when* to read, so the grading thread of an embedded server (or the worker API
storing a remote worker's events, which runs in this process too) reaches the page as soon as
its transaction commits, instead of at the stream's next poll. A writer in another process (a
second server on the same database, `judge regrade --db`) sends no wake-up: streams still look
at the rows now and then (web.services.events) and so see its events a little later.

Publishers are threads; waiters are asyncio tasks, each woken on its own loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict
from contextlib import contextmanager
from typing import Iterable, Iterator

import anyio

# The key of "some submission left or joined the queue": queued streams follow it, since their
# queue position changes with other submissions' claims and finishes.
QUEUE = 0


class Waiter:
    """One stream's wake-up: set from any thread, awaited on the loop that made it."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()

    def wake(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self._event.set)
        except RuntimeError:  # its loop is closed: the stream is gone
            pass

    async def wait(self, timeout_s: float) -> bool:
        """Until woken or `timeout_s`; whether it was woken. A wake-up that came while the
        stream was reading is not lost: the next wait returns at once."""
        with anyio.move_on_after(timeout_s):
            await self._event.wait()
        woken = self._event.is_set()
        self._event.clear()
        return woken


class SubmissionNews:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[int, set[Waiter]] = defaultdict(set)

    def publish(self, submission_ids: Iterable[int], queue_changed: bool = False) -> None:
        keys = set(submission_ids) | ({QUEUE} if queue_changed else set())
        with self._lock:
            targets = set().union(*(self._waiters.get(k, ()) for k in keys)) if keys else set()
        for w in targets:
            w.wake()

    @contextmanager
    def subscribe(self, submission_id: int) -> Iterator[Waiter]:
        """A waiter woken by this submission's events (and, after `follow_queue(w, True)`, by
        any change of the queue). Must be entered on the stream's event loop."""
        w = Waiter()
        self._add(submission_id, w)
        try:
            yield w
        finally:
            with self._lock:
                for key in (submission_id, QUEUE):
                    self._waiters.get(key, set()).discard(w)
                    if not self._waiters.get(key, True):
                        del self._waiters[key]

    def follow_queue(self, w: Waiter, on: bool) -> None:
        if on:
            self._add(QUEUE, w)
        else:
            with self._lock:
                self._waiters.get(QUEUE, set()).discard(w)

    def _add(self, key: int, w: Waiter) -> None:
        with self._lock:
            self._waiters[key].add(w)

    def waiting(self) -> int:
        """How many streams wait (for tests and the instructor's overview)."""
        with self._lock:
            return len(set().union(*self._waiters.values())) if self._waiters else 0
