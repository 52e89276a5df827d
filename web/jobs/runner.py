"""Grading one job, the same way wherever it runs.

    run_job(backend, catalog, grader, submission_id, worker_id)

claims the submission (a conditional UPDATE: queued, or running with an expired lease -> running,
owned by this worker), renews the lease from a heartbeat thread while the grader runs, passes
progress events on, and stores the report with a second conditional UPDATE that only the current
lease owner can win. So a duplicate task does nothing, a worker that died mid-job loses its lease
and another grades the submission again, and the report is recorded exactly once.

The backend is where the state lives: `DbBackend` (the server's own threads, straight to the
database) or `web.jobs.remote_backend.ApiBackend` (a worker on another host, through the server's
worker API: it holds no database credentials). The server-side halves of each step
(`take_job`, `store_result`) are shared by both, so the policy (attempt limit, worker table) is
in one place.
"""

from __future__ import annotations

import json
import logging
import threading
import traceback
from dataclasses import asdict, dataclass
from typing import Protocol

from judge.grading.platform_error import platform_error_report
from judge.judging.vocabulary import Event
from judge.problem import ProblemBank, ProblemError
from web.jobs import worker_table as workers
from web.jobs.graders import Grader
from web.settings import Settings
from web.store.db import Database
from web.store.lease import LeaseOwner

log = logging.getLogger(__name__)


@dataclass
class Claim:
    submission_id: int
    owner: str           # the lease holder: str(web.store.lease.LeaseOwner)
    attempt: int
    problem_id: str
    code: str
    problem_version: str | None = None   # the server's (remote workers compare with theirs)
    requires_device: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


class JobBackend(Protocol):
    def claim(self, submission_id: int, worker_id: str) -> tuple[str, Claim | None]: ...
    def renew(self, claim: Claim) -> bool | None: ...   # None: could not tell (retry)
    def event(self, claim: Claim, ev: dict) -> None: ...
    def finish(self, claim: Claim, report: dict) -> bool: ...


# ---------------------------------------------------------------- server side (the database)


def take_job(db: Database, settings: Settings, catalog: ProblemBank, submission_id: int,
             worker_id: str, device: str | None = None, with_version: bool = False
             ) -> tuple[str, Claim | None]:
    """Claim a submission for `worker_id`: ("claimed", Claim), ("skipped", None) when it is not
    waiting (done, or someone else's live lease, or it needs another device), or ("gave-up",
    None) when it has been started too often without finishing (then it gets an IE report)."""
    owner = str(LeaseOwner.new(worker_id))
    sub = db.claim(submission_id, owner, settings.lease_s, device)
    if sub is None:
        return "skipped", None
    attempt, problem_id = sub.attempts, sub.problem_id
    workers.set_status(db, worker_id, "grading", submission_id)
    # the problem is looked up here only for a remote worker's version check or a last report:
    # an embedded worker's run_job looks it up once, to grade
    if attempt > settings.max_attempts:
        report = platform_error_report(
            catalog.get(problem_id) or problem_id,
            f"grading stopped {attempt - 1} times without finishing (the worker died or "
            "was killed each time); not retrying").to_dict()
        store_result(db, submission_id, owner, attempt, report)
        return "gave-up", None
    version = None
    if with_version and (problem := catalog.get(problem_id)) is not None:
        try:
            version = problem.version
        except ProblemError:  # no reference solution here: the worker's grading will say so
            version = None
    return "claimed", Claim(submission_id, owner, attempt, problem_id, sub.code, version,
                            sub.requires_device)


def store_result(db: Database, submission_id: int, owner: str, attempt: int,
                 report: dict) -> bool:
    stored = db.finish(submission_id, owner, report, attempt)
    workers.set_status(db, LeaseOwner.parse(owner).worker, "idle", None, graded=stored)
    if not stored:
        log.warning("submission %s: another worker owns it now; this result is dropped",
                    submission_id)
    return stored


class DbBackend:
    """The server's own grading threads: every step straight to the database."""

    def __init__(self, db: Database, settings: Settings, catalog: ProblemBank):
        self.db, self.settings, self.catalog = db, settings, catalog

    def claim(self, submission_id, worker_id):
        return take_job(self.db, self.settings, self.catalog, submission_id, worker_id)

    def renew(self, claim):
        return self.db.renew(claim.submission_id, claim.owner, self.settings.lease_s)

    def event(self, claim, ev):
        with self.db.session() as s:
            self.db.add_event(s, claim.submission_id, str(ev.get("type", "event")), ev,
                              claim.attempt)
            s.commit()

    def finish(self, claim, report):
        return store_result(self.db, claim.submission_id, claim.owner, claim.attempt, report)


# ---------------------------------------------------------------- the job


class Heartbeat(threading.Thread):
    """Renews a claim's lease every `every_s` until stopped; `lost` once it was taken away."""

    def __init__(self, backend: JobBackend, claim: Claim, every_s: float):
        super().__init__(name=f"heartbeat-{claim.submission_id}", daemon=True)
        self.backend, self.claim, self.every_s = backend, claim, every_s
        self.stopped = threading.Event()
        self.lost = False

    def run(self):
        while not self.stopped.wait(self.every_s):
            try:
                ok = self.backend.renew(self.claim)
            except Exception:  # a busy database, a server restarting: try again next beat
                log.exception("heartbeat for submission %s failed", self.claim.submission_id)
                continue
            if ok is False:
                self.lost = True
                log.warning("submission %s: lease lost, its result will be dropped",
                            self.claim.submission_id)
                return


def run_job(backend: JobBackend, catalog: ProblemBank, grader: Grader, submission_id: int,
            worker_id: str, heartbeat_s: float, check_version: bool = False,
            provenance: dict | None = None) -> str:
    """Grade one submission if it is still waiting; what happened, in one word: stored,
    dropped (the lease was lost meanwhile), skipped or gave-up."""
    outcome, claim = backend.claim(submission_id, worker_id)
    if claim is None:
        return outcome
    problem = catalog.get(claim.problem_id)
    beat = Heartbeat(backend, claim, heartbeat_s)
    beat.start()

    def on_event(ev: dict) -> None:
        if beat.lost or not isinstance(ev, dict) or ev.get("type") == Event.DONE:
            return  # the stored "done" event is written together with the report
        try:
            backend.event(claim, ev)
        except Exception:
            log.exception("could not store an event of submission %s", submission_id)

    try:
        report = _grade(problem, claim, grader, on_event, catalog, check_version)
    finally:
        beat.stopped.set()
    if provenance:
        report.setdefault("provenance", {}).update(provenance)
    return "stored" if backend.finish(claim, report) else "dropped"


def _grade(problem, claim: Claim, grader: Grader, on_event, catalog: ProblemBank,
           check_version: bool) -> dict:
    try:
        if problem is None:
            return platform_error_report(claim.problem_id, f"problem {claim.problem_id} is "
                                         "not in this worker's problem bank").to_dict()
        if check_version and claim.problem_version:
            mine = problem.version
            if mine != claim.problem_version:
                log.error("problem %s differs between this worker (%s) and the server (%s)",
                          problem.id, mine[:12], claim.problem_version[:12])
                return platform_error_report(
                    problem, f"the grading worker's copy of problem {problem.id} differs from "
                    f"the server's (version {mine[:12]} vs {claim.problem_version[:12]}): the "
                    "worker must be updated").to_dict()
        report = grader(problem, claim.code, on_event)
        if not isinstance(report, dict) or "verdict" not in report:
            return platform_error_report(problem, "the grader returned no report").to_dict()
        json.dumps(report)  # must be storable
        return report
    except Exception as exc:
        log.exception("grading submission %s failed", claim.submission_id)
        return platform_error_report(
            problem or claim.problem_id,
            f"the grader failed: {type(exc).__name__}: {exc}\n"
            + traceback.format_exc(limit=8)[-3000:]).to_dict()
