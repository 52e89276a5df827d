"""What a student sees of a failed hidden test: one fixed word, whatever the failure was.

The hidden run may read the hidden tests, and it can steer each of them into any failure it
likes: sleep (TLE), allocate (MLE), print (OLE), raise (RE), forge a runner's line (tampered),
die before a test starts (NR), or get a value wrong at the observation of its choosing (the
label shown). Were the verdict, the kind or the label shown, each hidden test would carry
log2(10+) bits of what the run read; shown as "failed", it carries the one bit (passed or not)
that its score needs anyway. So a hidden test that counts and did not pass becomes
`WA` with `failure.kind == "failed"` and no label, before any front end, event or stored
report sees it; the verdict and kind it really had go to the judge's log (logger "judge").

The label is not kept either: it is the reference's, but *which* of the reference's labels is
the first to differ is the submission's choice (it matches the stream up to the observation it
wants named), so the label would be a log2(distinct labels) channel per test.

The overall verdict of a submission whose first failure is hidden is WA too, save two facts the
parent measured itself for the hidden run as a whole (`hidden_overall`): the run's memory
cgroup reached its limit (MLE), or the parent's own CPU clock stopped the run at a test's limit
or the suite's budget (TLE). The submission can still choose those, but only once per
submission, not once per test: at most log2(3) bits for the whole grading.

Standard library only: the page bundles this room (it has no hidden tests, so it never calls
this).
"""

from __future__ import annotations

import logging
import signal

from judge.judging.report import Failure, TestResult
from judge.judging.run_record import RunRecord
from judge.judging.verdict import Verdict
from judge.judging.vocabulary import FailureKind

log = logging.getLogger("judge")


def is_concealed(r: TestResult) -> bool:
    return r.failure is not None and r.failure.kind == FailureKind.FAILED


def conceal(r: TestResult, *, context: str = "") -> TestResult:
    """`r` as a student may see it: unchanged when it passed or does not count, else one fixed
    failure. The real verdict and kind are logged (once: concealing twice changes nothing)."""
    if not r.verdict.counts or r.verdict.passed or is_concealed(r):
        return r
    f = r.failure
    log.info("hidden test %s%s: %s (%s%s)", r.name, f" [{context}]" if context else "",
             r.verdict, f.kind if f else "no failure",
             f"; label {f.label!r}" if f and f.label else "")
    return TestResult(r.name, r.suite, Verdict.WA, weight=r.weight, hidden=True,
                      failure=Failure(FailureKind.FAILED, hidden=True))


def hidden_overall(run: RunRecord | None) -> Verdict:
    """The overall verdict when the first failing test is hidden (see the module's docstring)."""
    if run is None:
        return Verdict.WA
    if run.memory_exceeded:
        return Verdict.MLE
    stop = run.clock.stopped if run.clock else None
    by_cpu = stop.kind in ("cpu", "budget") if stop is not None else run.timeout_kind == "cpu"
    if (run.timed_out and by_cpu) or run.signal == signal.SIGXCPU:
        return Verdict.TLE
    return Verdict.WA
