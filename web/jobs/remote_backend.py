"""`ApiBackend`, the `JobBackend` that `web.jobs.runner.run_job` uses on a host without database
credentials: the remote worker's side of the worker API (`web.api.workers`), through the
platform's one HTTP client (`web.client.WorkerClient`).

Calls that must not be lost (claim, result) are retried with backoff while the server is
unreachable or restarting; a lease renewal that cannot get through says "don't know" and is
tried again at the next beat. Progress events go through a small background pump so that a slow
server never slows the grading down.
"""

from __future__ import annotations

import logging
import queue
import threading

from web.client import ApiError, ServerUnreachable, WorkerClient
from web.jobs.runner import Claim

log = logging.getLogger(__name__)


class _EventPump(threading.Thread):
    """Sends one job's progress events in batches, in order, off the grading thread."""

    def __init__(self, client: WorkerClient, claim: Claim):
        super().__init__(name=f"events-{claim.submission_id}", daemon=True)
        self.client, self.claim = client, claim
        self.q: queue.Queue = queue.Queue()
        self.start()

    def run(self):
        done = False
        while not done:
            batch = [self.q.get()]
            while True:
                try:
                    batch.append(self.q.get_nowait())
                except queue.Empty:
                    break
            done = batch[-1] is None
            events = [e for e in batch if e is not None]
            if not events:
                continue
            try:
                self.client.call(f"/api/workers/jobs/{self.claim.submission_id}/events",
                                 {"owner": self.claim.owner, "attempt": self.claim.attempt,
                                  "events": events}, retry_for_s=5.0)
            except Exception as exc:  # progress only: the report is what counts
                log.warning("submission %s: %d progress event(s) not delivered: %s",
                            self.claim.submission_id, len(events), exc)

    def close(self, timeout: float = 10.0) -> None:
        self.q.put(None)
        self.join(timeout)


class ApiBackend:
    """`JobBackend` over the worker API. `reregister()` is called when the server no longer
    knows this worker (its database was reset, or it never saw the registration)."""

    def __init__(self, client: WorkerClient, reregister=None, claim_retry_s: float = 120.0,
                 result_retry_s: float = 900.0, stop: threading.Event | None = None):
        self.client, self.reregister = client, reregister
        self.claim_retry_s, self.result_retry_s = claim_retry_s, result_retry_s
        self.stop = stop
        self._pumps: dict[str, _EventPump] = {}

    def claim(self, submission_id: int, worker_id: str):
        path = f"/api/workers/jobs/{submission_id}/claim"
        for _ in range(2):
            try:
                r = self.client.call(path, {"worker": worker_id}, self.claim_retry_s)
            except ApiError as exc:
                if exc.code == "unknown_worker" and self.reregister is not None:
                    self.reregister()
                    continue
                raise
            except ServerUnreachable as exc:
                # The submission stays queued in the database; the server queues it again.
                log.error("submission %s: could not claim it (%s); leaving it to the server",
                          submission_id, exc)
                return "unreachable", None
            c = r.get("claim")
            return r["outcome"], Claim(**c) if c else None
        return "skipped", None

    def renew(self, claim: Claim):
        try:
            r = self.client.call(f"/api/workers/jobs/{claim.submission_id}/lease",
                                 {"owner": claim.owner})
        except ServerUnreachable:
            return None
        return bool(r.get("held"))

    def event(self, claim: Claim, ev: dict) -> None:
        pump = self._pumps.get(claim.owner)
        if pump is None:
            pump = self._pumps[claim.owner] = _EventPump(self.client, claim)
        pump.q.put(ev)

    def finish(self, claim: Claim, report: dict) -> bool:
        pump = self._pumps.pop(claim.owner, None)
        if pump is not None:
            pump.close()
        try:
            r = self.client.call(f"/api/workers/jobs/{claim.submission_id}/result",
                                 {"owner": claim.owner, "attempt": claim.attempt,
                                  "report": report}, self.result_retry_s, stop=None)
        except ServerUnreachable as exc:
            log.error("submission %s: the result could not be delivered (%s); it will be "
                      "graded again", claim.submission_id, exc)
            return False
        return bool(r.get("stored"))
