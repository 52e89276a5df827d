"""Verdicts: the overall vocabulary, the per-test extras, and which one wins."""

from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    AC = "AC"    # accepted
    WA = "WA"    # wrong answer: an observation differs, or an assertion in a test failed
    RE = "RE"    # runtime error: an exception from the submission, or the process died
    TLE = "TLE"  # time limit exceeded
    MLE = "MLE"  # memory limit exceeded
    OLE = "OLE"  # output limit exceeded
    CE = "CE"    # the submission does not import
    IE = "IE"    # internal error: the judge's own fault, never the student's
    # per-test only
    NR = "NR"    # not run: the process died before this test started (counts as failed)
    SKIP = "SKIP"  # skipped in the reference run too (does not count)

    def __str__(self) -> str:
        return self.value

    @property
    def passed(self) -> bool:
        return self is Verdict.AC

    @property
    def counts(self) -> bool:
        """Whether the test is part of the score."""
        return self is not Verdict.SKIP


# Each verdict's name in English; the other languages' come from judge/messages (verdict_name).
NAMES = {"AC": "accepted", "WA": "wrong answer", "RE": "runtime error",
         "TLE": "time limit exceeded", "MLE": "memory limit exceeded",
         "OLE": "output limit exceeded", "CE": "does not import (compile error)",
         "IE": "internal error", "NR": "not run", "SKIP": "skipped"}


def overall(tests_in_order, *, compile_error: bool = False, internal_error: bool = False) -> Verdict:
    """IE, then CE, then the first failing test's verdict (suite order, file order), else AC."""
    if internal_error:
        return Verdict.IE
    if compile_error:
        return Verdict.CE
    for v in tests_in_order:
        v = Verdict(v)
        if v.counts and not v.passed:
            return v
    return Verdict.AC
