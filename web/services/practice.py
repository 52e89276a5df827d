"""A practice run: the public tests of a problem whose tests the page cannot run (they need
numpy or torch, which the page's Python lacks), graded on the server when the student presses
Run. Nothing is stored and nothing is scored: the answer is the public suite's report, marked
`practice`. It goes through the same sandbox as a submission (judge.grade, public suite only).

The limits are a submission's: the code's size and text, the per-address rate, and per visitor
(or account) the submissions-per-window rate and the queued-or-running cap, where a practice
run counts as one submission (it is one grading of the same code on the same machine).
"""

from __future__ import annotations

import threading
from datetime import timedelta

from sqlalchemy import func, select

from judge.messages import translate
from web.services import Refused
from web.services.limits import SlidingWindow
from web.store.db import LIVE, QUEUED, RUNNING, Submission, utcnow


class PracticeLimits:
    """In-memory counters of the practice runs of this process, by visitor."""

    def __init__(self, settings):
        self.by_visitor = SlidingWindow(settings.rate_limit_count, settings.rate_limit_window_s)
        self.running: dict[int, int] = {}
        self.lock = threading.Lock()

    def start(self, settings, db, visitor_id: int, lang: str) -> None:
        """Counts one practice run for the visitor, or raises Refused (429) as a submission
        past the same limit would be."""
        since = utcnow() - timedelta(seconds=settings.rate_limit_window_s)
        with db.session() as s:
            mine = (Submission.kind == LIVE, Submission.visitor_id == visitor_id)
            recent = s.scalar(select(func.count()).select_from(Submission).where(
                *mine, Submission.created_at >= since)) or 0
            active = s.scalar(select(func.count()).select_from(Submission).where(
                *mine, Submission.status.in_((QUEUED, RUNNING)))) or 0
        with self.lock:
            if active + self.running.get(visitor_id, 0) >= settings.max_queued_per_visitor:
                raise Refused(429, "too_many_queued", translate(
                    "you already have {n} submissions waiting or being graded (at most {cap}); "
                    "wait for one to finish", lang, n=active + self.running.get(visitor_id, 0),
                    cap=settings.max_queued_per_visitor), headers={"Retry-After": "5"})
            wait: float | None
            if recent >= settings.rate_limit_count:
                wait = int(settings.rate_limit_window_s)
            else:
                wait = self.by_visitor.hit(str(visitor_id))
            if wait is not None:
                retry = int(wait) + 1
                raise Refused(429, "rate_limited", translate(
                    "at most {n} submissions per {window} s; try again in {wait} s", lang,
                    n=settings.rate_limit_count, window=int(settings.rate_limit_window_s),
                    wait=retry), headers={"Retry-After": str(retry)})
            self.running[visitor_id] = self.running.get(visitor_id, 0) + 1

    def done(self, visitor_id: int) -> None:
        with self.lock:
            left = self.running.get(visitor_id, 1) - 1
            if left > 0:
                self.running[visitor_id] = left
            else:
                self.running.pop(visitor_id, None)


def practice_report(report: dict) -> dict:
    """The public suite's report as a practice run shows it: no score (nothing is graded)."""
    out = dict(report)
    out["score"] = None
    out["practice"] = True
    return out
