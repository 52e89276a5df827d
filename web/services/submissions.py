"""Taking a submission in and showing it: the admission rules, the stored row, its views.

Admission is checked cheapest first: the code's size and text (no database), the per-address rate
(memory), then, in the one transaction that stores the row, the caps that need counting rows
(queued per visitor, per address, per problem; submissions per visitor per window). Counting and
inserting in one transaction keeps two racing requests of one visitor from both passing a cap.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from judge.judging.vocabulary import Event
from judge.messages import translate
from web.courses.standing import submission_standing
from web.services import Refused
from web.settings import Settings
from web.store.db import ADDRESS_CHARS, LIVE, QUEUED, RUNNING, Database, Submission, utcnow

log = logging.getLogger(__name__)

# JSON may escape each byte of the code as six (\u00XX), and the rest of the body (the problem
# field, the keys) is a few bytes: the largest body a code of the allowed size can need.
JSON_ESCAPE_BYTES = 6
BODY_OVERHEAD_BYTES = 4096
# A full queue of one problem is drained in about a minute by a classroom's workers: ask a client
# to come back then. A visitor's own queue frees as soon as one grading ends: a few seconds.
RETRY_QUEUE_FULL_S = 60
RETRY_OWN_QUEUE_S = 5
# A page of one visitor's submission list: enough for a semester of one problem, bounded so a
# query never reads a whole table.
MAX_LIST = 500


def body_limit(max_code_bytes: int) -> int:
    """Bytes of request body a submission of at most `max_code_bytes` of code may take."""
    return max_code_bytes * JSON_ESCAPE_BYTES + BODY_OVERHEAD_BYTES


def iso_time(dt: datetime | None) -> str | None:
    return dt.isoformat() + "Z" if dt else None


# ---------------------------------------------------------------- what a client reads


class SubmissionCreated(BaseModel):
    id: int
    status: str = QUEUED
    queue_position: int | None = None
    url: str
    events: str


class SubmissionSummary(BaseModel):
    id: int
    problem: str
    status: str = Field(description="queued | running | done")
    verdict: str | None = None
    score: float | None = None
    created_at: str
    finished_at: str | None = None


class SubmissionOut(SubmissionSummary):
    queue_position: int | None = Field(
        default=None, description="1 = next to be graded; null unless queued")
    report: dict | None = Field(default=None, description="the grading core's Report once done")
    attempts: int = 0
    code: str | None = None
    assignments: list[dict] = Field(
        default_factory=list, description="what this submission counts for in each of its "
        "author's assignments with the problem: phase (open: in full; late window: `counts` of "
        "its score; not open, closed: not at all), by the server's clock when it was made")


def summary(sub: Submission) -> SubmissionSummary:
    return SubmissionSummary(id=sub.id, problem=sub.problem_id, status=sub.status,
                             verdict=sub.verdict, score=sub.score,
                             created_at=iso_time(sub.created_at) or "",
                             finished_at=iso_time(sub.finished_at))


def view(db: Database, s: Session, sub: Submission, with_code: bool = True) -> SubmissionOut:
    """The submission as the API and the pages show it (`code` left out unless asked)."""
    counted = submission_standing(db, sub.visitor_id, sub.problem_id, sub.created_at) \
        if (sub.kind or LIVE) == LIVE else []
    return SubmissionOut(**summary(sub).model_dump(), queue_position=db.queue_position(s, sub),
                         report=sub.report, attempts=sub.attempts,
                         code=sub.code if with_code else None, assignments=counted)


def created(sid: int, position: int | None) -> SubmissionCreated:
    return SubmissionCreated(id=sid, status=QUEUED, queue_position=position,
                             url=f"/submissions/{sid}", events=f"/api/submissions/{sid}/events")


# ---------------------------------------------------------------- admission


def check_code(settings: Settings, code: str) -> None:
    """The code is storable text of the allowed size, not empty."""
    try:
        size = len(code.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise Refused(422, "bad_code", "the code is not valid Unicode text (an unpaired "
                      f"surrogate at character {exc.start})") from None
    if size > settings.max_code_bytes:
        raise Refused(413, "code_too_large", f"the code is {size} bytes; the limit is "
                      f"{settings.max_code_bytes} bytes")
    if not code.strip():
        raise Refused(422, "empty_code", "the code is empty")


def check_address_rate(settings: Settings, limits, address: str, lang: str = "en") -> None:
    """Tokens cost nothing to make, addresses do: submissions per address per window."""
    wait = limits.submissions_by_address.hit(address)
    if wait is not None:
        retry = int(wait) + 1
        raise Refused(429, "rate_limited_address", translate(
            "at most {n} submissions per {window} s from one address; try again in {wait} s",
            lang, n=settings.rate_limit_per_address, window=int(settings.rate_limit_window_s),
            wait=retry), headers={"Retry-After": str(retry)})


def _count_active(s: Session, *where) -> int:
    return int(s.scalar(select(func.count()).select_from(Submission).where(
        Submission.kind == LIVE, *where)) or 0)


def _check_caps(s: Session, settings: Settings, visitor_id: int, problem_id: str,
                address: str, account: bool = False, lang: str = "en") -> None:
    """With `account` (a signed-in student) the visitor's caps are the account's and no cap
    counts the address: a class behind one address is many people, an address is not one.
    Refusals are worded in `lang`, the page's language."""
    queued_cap = settings.max_queued_per_account if account else settings.max_queued_per_visitor
    rate_cap = settings.rate_limit_per_account if account else settings.rate_limit_count
    active = _count_active(s, Submission.visitor_id == visitor_id,
                           Submission.status.in_((QUEUED, RUNNING)))
    if active >= queued_cap:
        raise Refused(429, "too_many_queued", translate(
            "you already have {n} submissions waiting or being graded (at most {cap}); wait "
            "for one to finish", lang, n=active, cap=queued_cap),
            headers={"Retry-After": str(RETRY_OWN_QUEUE_S)})
    from_here = 0 if account else _count_active(s, Submission.client_address == address,
                                                Submission.status.in_((QUEUED, RUNNING)))
    if from_here >= settings.max_queued_per_address:
        raise Refused(429, "too_many_queued_address", translate(
            "{n} submissions from your address are waiting or being graded (at most {cap}); "
            "wait for one to finish", lang, n=from_here, cap=settings.max_queued_per_address),
            headers={"Retry-After": str(RETRY_OWN_QUEUE_S)})
    waiting = _count_active(s, Submission.problem_id == problem_id, Submission.status == QUEUED)
    if waiting >= settings.max_queued_per_problem:
        raise Refused(429, "queue_full", translate(
            "{n} submissions of this problem are waiting to be graded; try again in a minute",
            lang, n=waiting), headers={"Retry-After": str(RETRY_QUEUE_FULL_S)})
    since = utcnow() - timedelta(seconds=settings.rate_limit_window_s)
    oldest = s.scalar(select(func.min(Submission.created_at)).where(
        Submission.visitor_id == visitor_id, Submission.kind == LIVE,
        Submission.created_at >= since))
    recent = _count_active(s, Submission.visitor_id == visitor_id,
                           Submission.created_at >= since)
    if recent >= rate_cap and oldest is not None:
        wait = max(1, int((oldest - since).total_seconds()) + 1)
        raise Refused(429, "rate_limited", translate(
            "at most {n} submissions per {window} s; try again in {wait} s", lang, n=rate_cap,
            window=int(settings.rate_limit_window_s), wait=wait),
            headers={"Retry-After": str(wait)})


@dataclass
class Stored:
    id: int
    queue_position: int | None


def store(db: Database, settings: Settings, visitor_id: int, problem_id: str, code: str,
          address: str, device: str | None, account: bool = False,
          lang: str = "en") -> Stored:
    """Check the caps that count rows and store the submission with its `queued` event, in one
    transaction. Raises Refused when a cap is reached."""
    with db.session() as s:
        _check_caps(s, settings, visitor_id, problem_id, address, account, lang)
        sub = Submission(visitor_id=visitor_id, problem_id=problem_id, code=code,
                         code_sha256=hashlib.sha256(code.encode()).hexdigest(), status=QUEUED,
                         requires_device=device, client_address=address[:ADDRESS_CHARS])
        s.add(sub)
        s.flush()
        position = db.queue_position(s, sub)
        db.add_event(s, sub.id, Event.QUEUED, {"type": Event.QUEUED, "queue_position": position})
        s.commit()
        return Stored(sub.id, position)


def device_needed(settings: Settings, problem, code: str | None = None) -> str | None:
    """A problem that needs a GPU goes to the GPU workers' queue (distributed mode only: the
    embedded workers take every job). A CUDA C++ problem needs one only where the CPU
    emulator cannot grade it (its files, or this submission's `code`, use what the emulator
    does not model: judge/grading/cpp/cuda.py); elsewhere any worker grades it, a GPU worker
    with nvcc, a CPU worker on the emulator."""
    if not settings.distributed:
        return None
    if getattr(problem, "language", "python") == "cuda":
        from judge.grading.cpp.cuda import emulator_gaps, needs_gpu_worker
        return "cuda" if needs_gpu_worker(problem) or (code and emulator_gaps(code)) else None
    return "cuda" if "cuda" in (problem.requires or []) else None


def enqueue(jobs, submission_id: int, device: str | None) -> bool:
    """Hand the stored submission to the queue. A failure is logged, not raised: the row is the
    record, and the reaper queues every queued row the queue lost."""
    try:
        jobs.enqueue(submission_id, device=device)
        return True
    except Exception:
        log.exception("submission %s is stored but could not be queued (the reaper will queue "
                      "it again)", submission_id)
        return False
