"""Each case's verdict: the student's binary's records of it against the reference binary's,
compared here, in the judge, outside both processes (records.py says what a record is).

A case passes when the student's run recorded the same checks with the same values, in the
same order, and the case's process ended as the reference's did (its own `done`, exit 0).
The first difference decides: a value that differs is WA at that check (the reference's
value is the expected one); a condition that did not hold is WA; an exception is RE; a
process that died is RE (with the sanitizer's report, located in the student's file), or
TLE / MLE / OLE where a limit ended it. A case the run never reached is NR. Records that
came out of order (written by the student's code, not the harness) make the case WA.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Callable

from judge.grading.cpp.records import Case, Observation, Stream
from judge.judging.report import Failure
from judge.judging.verdict import Verdict
from judge.judging.vocabulary import FailureKind
from judge.sandbox.result import SandboxResult

SANITIZER_EXIT = 86
KIND_VERDICT = {FailureKind.OBSERVATION: Verdict.WA, FailureKind.ASSERTION: Verdict.WA,
                FailureKind.TAMPERED: Verdict.WA, FailureKind.EXCEPTION: Verdict.RE,
                FailureKind.CRASH: Verdict.RE, FailureKind.TIMEOUT: Verdict.TLE,
                FailureKind.MEMORY: Verdict.MLE, FailureKind.OUTPUT: Verdict.OLE,
                FailureKind.DISK: Verdict.OLE, FailureKind.NOT_RUN: Verdict.NR}


@dataclass
class RefCase:
    name: str
    observations: list[Observation]
    cpu_s: float


@dataclass
class CaseVerdict:
    name: str
    verdict: Verdict
    failure: Failure | None
    time_s: float | None
    observations: int


def judge_run(ref: list[RefCase], sub: Stream, result: SandboxResult, limits: list[float],
              report: Callable[[int], str | None]) -> list[CaseVerdict]:
    """`limits`: each case's CPU seconds; `report(i)`: the located sanitizer report of case
    i's stderr, if it has one."""
    out, ended = [], False
    for i, r in enumerate(ref):
        s = sub.cases[i] if i < len(sub.cases) else None
        if s is None:
            failure = None if ended else _never_started(result)
            ended = True
            out.append(_verdict(r.name, failure or Failure(FailureKind.NOT_RUN), None, 0))
            continue
        failure = _case(r, s, result, limits[i], lambda: report(i))
        out.append(_verdict(r.name, failure, s.cpu_s, len(s.observations)))
        ended = ended or not s.finished
    return out


def _verdict(name, failure: Failure | None, time_s, n) -> CaseVerdict:
    v = Verdict.AC if failure is None else KIND_VERDICT.get(FailureKind(failure.kind),
                                                            Verdict.WA)
    return CaseVerdict(name, v, failure, time_s, n)


def _never_started(result: SandboxResult) -> Failure:
    """The first case the run did not reach: what ended the run, said of it."""
    kind = _limit_kind(result)
    if kind is not None:
        return Failure(kind, message="the program was stopped before this case started")
    return Failure(FailureKind.CRASH, message="the program ended before this case started "
                                              "(its code ran before the tests)")


def _limit_kind(result: SandboxResult) -> FailureKind | None:
    if result.memory_exceeded:
        return FailureKind.MEMORY
    if result.timed_out:
        return FailureKind.TIMEOUT
    if result.disk_exceeded:
        return FailureKind.DISK
    if result.output_exceeded:
        return FailureKind.OUTPUT
    return None


def _case(r: RefCase, s: Case, result: SandboxResult, limit: float, report) -> Failure | None:
    if s.tampered or s.name != r.name or s.overflow:
        return Failure(FailureKind.TAMPERED, message="the program's records of this case are "
                       "not the tests' (written out of turn, or too many)")
    for j, (want, got) in enumerate(zip(r.observations, s.observations)):
        if want.kind == got.kind == "close" and want.what == got.what:
            differs = _not_close(r, j, want, got)  # a CUDA output, within the test's tolerance
            if differs is not None:
                return differs
        elif want != got:
            return _differs(r, j, want, got)
    if len(s.observations) > len(r.observations):
        extra = s.observations[len(r.observations)]
        return Failure(FailureKind.TAMPERED, label=extra.what or None,
                       message="more checks were recorded than the tests make")
    ended = _ending(s, result, limit, report)
    if ended is not None:
        return ended
    if len(s.observations) < len(r.observations):
        missing = r.observations[len(s.observations)]
        return Failure(FailureKind.ASSERTION, label=missing.what or None,
                       message="the case ended before this check was made")
    return None


def _not_close(r: RefCase, j: int, want: Observation, got: Observation) -> Failure | None:
    from judge.grading.cpp.cuda import close_failure

    why = close_failure(want.value, got.value)
    return None if why is None else Failure(FailureKind.OBSERVATION, label=want.what or None,
                                            index=j, message=f"{want.what}: {why}")


def _differs(r: RefCase, j: int, want: Observation, got: Observation) -> Failure:
    label = want.what or next((o.what for o in r.observations[j + 1:] if o.what), None)
    if want.kind == got.kind == "launch" and want.what == got.what:
        return Failure(FailureKind.EXCEPTION, exc_type=got.value, label=label, index=j,
                       message=f"{label}: the kernel failed ({got.value})")
    if want.kind == "ok" and got.kind == "ok":
        return Failure(FailureKind.ASSERTION, label=label, index=j,
                       message=f"{label}: the condition does not hold")
    if want.kind != got.kind or want.what != got.what:
        return Failure(FailureKind.TAMPERED, label=label, index=j,
                       message="a different check was recorded here than the tests make")
    return Failure(FailureKind.OBSERVATION, label=label, index=j, expected=want.value,
                   got=got.value, message=f"{label}: expected {want.value}, got {got.value}")


def _ending(s: Case, result: SandboxResult, limit: float, report) -> Failure | None:
    """How the case's process ended, when not as the reference's did."""
    if s.how is None:  # the run itself ended while the case was on
        kind = _limit_kind(result) or FailureKind.CRASH
        return Failure(kind, message="the program was stopped during this case" if kind !=
                       FailureKind.CRASH else "the program ended during this case")
    if s.how == "wall":
        return Failure(FailureKind.TIMEOUT, message="the case slept or waited past its "
                                                    "wall-clock net")
    if s.end == "leak" or s.how == f"exit {SANITIZER_EXIT}":
        return Failure(FailureKind.CRASH, message=report() or "a sanitizer report")
    if s.how.startswith("signal"):
        return _signalled(int(s.how.split()[1]), s, result, limit, report)
    if s.end == "exception":
        return Failure(FailureKind.EXCEPTION, exc_type="exception",
                       message=f"an exception escaped the case: {s.why}")
    if s.end == "fail":
        return Failure(FailureKind.ASSERTION, label=s.why or None, message=s.why)
    if s.end != "done" or s.how != "exit 0":
        return Failure(FailureKind.CRASH, message=f"the case's process ended ({s.how}) "
                                                  "before the case did")
    return None


def _timeout(limit: float) -> Failure:
    return Failure(FailureKind.TIMEOUT, message=f"the case used up its {limit:g} s of CPU time")


def _signalled(sig: int, s: Case, result, limit: float, report) -> Failure:
    # SIGXCPU is the soft limit (pj_judge.hpp's in_case); a SIGKILL past the limit is the hard
    # one, reached by code that caught SIGXCPU (rusage may read 15 % low under steal). A SIGKILL
    # in a run whose cgroup killed for memory is that kill, even past 0.8 of the limit: near
    # the cgroup's limit the kernel's reclaim is charged to the case as CPU (on a busy host,
    # more than the case's own seconds), so the CPU reading cannot tell the two apart
    if sig == signal.SIGXCPU:
        return _timeout(limit)
    if sig == signal.SIGKILL and result.memory_exceeded:
        return Failure(FailureKind.MEMORY, message="the case ran out of memory")
    if sig == signal.SIGKILL and (s.cpu_s or 0) >= 0.8 * limit:
        return _timeout(limit)
    name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
    return Failure(FailureKind.CRASH, message=report() or f"the case's process was killed "
                                                          f"by {name}")
