"""A submission's progress as Server-Sent Events: the stored event rows, in order, from the one
after `Last-Event-ID`, with the queue position while it waits, until its one `done`.

The database is the record: every event is a row, so a stream resumed after a dropped connection
or a server restart misses nothing and repeats nothing.
"""

from __future__ import annotations

import json
import time
from typing import AsyncIterator, Awaitable, Callable

import anyio
from sqlalchemy import select

from judge.judging.vocabulary import Event
from web.store.db import DONE, QUEUED, Database, Submission, SubmissionEvent

# Rows read per look: a grading writes a few hundred events (a start and a finish per test), so
# one look usually drains it; a longer backlog (a resumed stream) is read in pages, so a look
# never holds a pooled connection for long.
EVENTS_PER_READ = 500
# A comment line when nothing was sent for this long: proxies close idle connections (nginx's
# proxy_read_timeout defaults to 60 s), and a comment is the cheapest thing that keeps one open.
KEEP_ALIVE_S = 15.0
# How long the browser's EventSource waits before it reconnects a dropped stream: short enough
# that a student sees progress resume, long enough not to hammer a server that is restarting.
RECONNECT_MS = 2000
# How often a waiting stream asks whether its client is still there: a closed tab frees its
# stream slot within this long, at the cost of no database read.
DISCONNECT_CHECK_S = 1.0
# How often a stream reads the rows with no news: a writer in another process sends none. In
# embedded mode that is only an ops command on the same database file (a regrade's approval);
# in distributed mode web.api passes Settings.sse_poll_s instead.
OTHER_WRITERS_S = 5.0


def sse(type_: str, data: dict, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {type_}\ndata: {json.dumps(data)}\n\n"


def read_events(db: Database, submission_id: int, after: int):
    """The event rows after `after` (at most EVENTS_PER_READ), the submission's status, queue
    position, and its report once done."""
    with db.session() as s:
        rows = list(s.scalars(select(SubmissionEvent)
                              .where(SubmissionEvent.submission_id == submission_id,
                                     SubmissionEvent.id > after)
                              .order_by(SubmissionEvent.id).limit(EVENTS_PER_READ)))
        sub = s.get(Submission, submission_id)
        done = sub.status == DONE
        return ([(r.id, r.type, r.data, r.attempt) for r in rows], sub.status,
                db.queue_position(s, sub), sub.report if done else None)


async def stream(db: Database, submission_id: int, last_id: int, look_every_s: float,
                 disconnected: Callable[[], Awaitable[bool]]) -> AsyncIterator[str]:
    """The event stream of one submission, as SSE text chunks. It reads the rows when this
    process commits news of the submission (web.store.news) and at least every `look_every_s`
    (writers in other processes send no news). It ends with the one `done` event, which carries
    the Report, so a client need not fetch it again."""
    yield f"retry: {RECONNECT_MS}\n\n"
    sent_position = None
    quiet_since = time.monotonic()
    with db.news.subscribe(submission_id) as news:
        while True:
            rows, status, position, report = await anyio.to_thread.run_sync(
                read_events, db, submission_id, last_id)
            db.news.follow_queue(news, status == QUEUED)
            for eid, type_, data, attempt in rows:
                data = dict(data, type=type_, attempt=attempt)
                if type_ == Event.QUEUED:
                    sent_position = data.get("queue_position")
                if type_ == Event.DONE:
                    if report is None:  # a page of rows that ends before the row that is done
                        report = await anyio.to_thread.run_sync(_report, db, submission_id)
                    yield sse(type_, dict(data, report=report), eid)
                    return
                yield sse(type_, data, eid)
                last_id = eid
            if len(rows) == EVENTS_PER_READ:
                continue  # a backlog: the next page at once
            if status == QUEUED and position != sent_position:
                sent_position = position
                yield sse(Event.POSITION, {"type": Event.POSITION, "queue_position": position})
            if status == DONE and not rows:
                # Done without a "done" row (should not happen): end the stream anyway.
                yield sse(Event.DONE, {"type": Event.DONE, "report": report})
                return
            if rows:
                quiet_since = time.monotonic()
            looked = time.monotonic()
            while time.monotonic() - looked < look_every_s:
                if await disconnected():
                    return
                if time.monotonic() - quiet_since > KEEP_ALIVE_S:
                    quiet_since = time.monotonic()
                    yield ": keep-alive\n\n"
                if await news.wait(min(DISCONNECT_CHECK_S,
                                       look_every_s - (time.monotonic() - looked))):
                    break


def _report(db: Database, submission_id: int) -> dict | None:
    with db.session() as s:
        sub = s.get(Submission, submission_id)
        return sub.report if sub is not None else None
