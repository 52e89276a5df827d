"""A grading worker on any host: `judge worker --queue redis://... --server http://... `.

It takes grading jobs from the Redis queue (Huey's storage) and does everything else through the
server's worker API (`web.api.workers`): it registers its slots and device, sends heartbeats,
claims each submission (getting its code and a lease), renews the lease while grading, sends the
progress events and the Report. It holds no database credentials: the code it runs is untrusted.

- Device: CUDA when present (`--device auto`), else CPU. A CUDA worker grades one job at a time
  (one per GPU: run one worker per GPU, with CUDA_VISIBLE_DEVICES) and also takes the jobs that
  require a GPU (parity checks). The reference stack is kept warm between jobs (`judge.grading.warm_grader.WarmGrader`).
- Redis unreachable: each slot backs off (0.5 s doubling to 30 s, with jitter) and reconnects;
  the server unreachable: claims and results are retried (`web.jobs.remote_backend`).
- SIGTERM/SIGINT: finish the jobs in progress, then leave; a second signal leaves at once (the
  leases then run out and the jobs are graded again elsewhere).
"""

from __future__ import annotations

import logging
import os
import random
import signal
import socket
import threading
import time

from judge.problem import ProblemBank
from web.client import ServerUnreachable, WorkerClient
from web.jobs.graders import Grader
from web.jobs.queue import JobQueue, redact_url
from web.jobs.remote_backend import ApiBackend
from web.jobs.runner import run_job
from web.store.lease import WorkerId

log = logging.getLogger(__name__)
MAX_BACKOFF_S = 30.0


class RemoteWorker:
    def __init__(self, *, queue_url: str, server: str, token: str, catalog: ProblemBank,
                 grader: Grader, device: str, gpu_name: str | None = None, slots: int = 1,
                 warm=None, host: str | None = None, version: str | None = None):
        self.queue = JobQueue(queue_url, handler=self._handle)
        self.queue_url, self.server = queue_url, server
        self.client = WorkerClient(server, token)
        self.catalog, self.grader, self.warm = catalog, grader, warm
        self.device, self.gpu_name, self.slots = device, gpu_name, slots
        from judge.grading.shards import set_slots
        set_slots(slots)  # each grading's hidden suite gets the cores left to one slot
        self.host = host or socket.gethostname()
        self.version = version
        self.stop = threading.Event()
        self.ids: list[str] = []
        self.queues: tuple[str, ...] = ("any",)
        self.heartbeat_s = 10.0
        self.state: dict[str, dict] = {}
        self._local = threading.local()
        self._register_lock = threading.Lock()
        self.backend = ApiBackend(self.client, reregister=self.register, stop=self.stop)
        self.graded = 0

    # ------------------------------------------------------------ the server

    def register(self) -> None:
        """Announce the slots (retried until the server answers or we are stopped)."""
        with self._register_lock:
            while True:
                try:
                    r = self.client.call("/api/workers/register", {
                        "host": self.host, "pid": os.getpid(), "device": self.device,
                        "gpu_name": self.gpu_name, "slots": self.slots,
                        "version": self.version}, retry_for_s=60.0, stop=self.stop)
                    break
                except ServerUnreachable:
                    if self.stop.is_set():
                        raise
            self.ids = list(r["workers"])
            self.queues = tuple(r.get("queues") or ["any"])
            self.heartbeat_s = float(r.get("heartbeat_s") or 10.0)
            for wid in self.ids:
                self.state.setdefault(wid, {"status": "idle", "submission": None})
            log.info("registered with %s as %s (%s, queues %s)", self.server,
                     ", ".join(self.ids), self.device, "+".join(self.queues))

    def _heartbeats(self) -> None:
        while not self.stop.wait(self.heartbeat_s):
            try:
                r = self.client.call("/api/workers/heartbeat", {"workers": {
                    wid: self.state.get(wid, {"status": "idle"}) for wid in self.ids}})
                if r.get("unknown"):
                    self.register()
            except Exception as exc:  # the client already said the server is down
                log.debug("heartbeat failed: %s", exc)

    # ------------------------------------------------------------ the queue

    def _slot(self, wid: str) -> None:
        self._local.wid = wid
        delay = 0.0
        while not self.stop.is_set():
            try:
                got = self.queue.dequeue(self.queues)
            except Exception as exc:
                delay = min(MAX_BACKOFF_S, delay * 2 if delay else 0.5)
                wait = delay * random.uniform(0.8, 1.2)
                if self.state[wid]["status"] != "queue-down":
                    log.warning("%s: the queue %s is unreachable (%s: %s)", wid,
                                redact_url(self.queue_url), type(exc).__name__, exc)
                log.warning("%s: reconnecting to the queue in %.1f s", wid, wait)
                self.state[wid] = {"status": "queue-down", "submission": None}
                self.stop.wait(wait)
                continue
            if delay:
                log.warning("%s: the queue answers again; reconnected", wid)
                delay = 0.0
                self.state[wid] = {"status": "idle", "submission": None}
            if got is None:
                continue
            q, task = got
            try:
                self.queue.execute(q, task)
            except Exception:
                log.exception("%s: a grading job failed", wid)
            finally:
                self.state[wid] = {"status": "idle", "submission": None}

    def _handle(self, submission_id: int) -> str:
        wid = self._local.wid
        self.state[wid] = {"status": "grading", "submission": submission_id}
        t0 = time.monotonic()
        outcome = run_job(self.backend, self.catalog, self.grader, submission_id, wid,
                          self.heartbeat_s, check_version=True,
                          provenance={"worker": wid, "worker_device": self.device})
        if outcome == "stored":
            self.graded += 1
        log.info("%s: submission %s %s (%.1f s)", wid, submission_id, outcome,
                 time.monotonic() - t0)
        return outcome

    # ------------------------------------------------------------ life

    def run(self, install_signals: bool = True) -> int:
        if install_signals:
            self._install_signals()
        try:
            self.register()
        except ServerUnreachable:
            return 0  # stopped before the server ever answered
        threading.Thread(target=self._heartbeats, name="heartbeats", daemon=True).start()
        if self.warm is not None:
            for wid in self.ids:
                self.state[wid] = {"status": "warming", "submission": None}
            try:
                self.warm()
            except Exception:
                log.exception("warming the reference stack failed; grading goes on cold")
            for wid in self.ids:
                self.state[wid] = {"status": "idle", "submission": None}
        slots = [threading.Thread(target=self._slot, args=(wid,), name=WorkerId.parse(wid).slot,
                                  daemon=True) for wid in self.ids]
        for t in slots:
            t.start()
        print(f"grading worker {self.host}:{os.getpid()} ({self.device}"
              f"{', ' + self.gpu_name if self.gpu_name else ''}, {len(slots)} slot(s)) on "
              f"{redact_url(self.queue_url)}, reporting to {self.server}", flush=True)
        self.stop.wait()
        for t in slots:
            t.join()
        try:
            self.client.call("/api/workers/stopped", {"workers": self.ids})
        except Exception:
            pass
        return 0

    def _install_signals(self) -> None:
        def on_signal(signum, _frame):
            if self.stop.is_set():
                os._exit(128 + signum)
            log.warning("stopping after the job(s) in progress (signal again to stop now)")
            self.stop.set()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, on_signal)
