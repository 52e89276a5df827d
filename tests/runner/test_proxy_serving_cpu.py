"""The trusted side's serving CPU (docs/IMPORTED_GRADING.md, "The trusted side's serving CPU") is
told to the grader while a long outermost request is still being served, not only at its end.

A gpusim launch is one request of the submission's that the trusted side serves for seconds,
serving the kernel's accesses nested in it. Told only at its end, the grader charged that
serving CPU meanwhile as the submission's and, since its count never goes back, charged the
next test nothing: cu-reduction's second hidden test got a reference time of 0.0 s, so a
3 s limit (min_test_s), and its own solution was TLE there (issue 27)."""

from __future__ import annotations

import time

from judge.runner.proxy.serving import ServingCPU


def _burn(seconds: float) -> None:
    t = time.thread_time()
    while time.thread_time() - t < seconds:
        pass


def test_a_long_outermost_request_is_told_as_it_goes():
    cpu, told = ServingCPU(), []
    cpu.report = told.append
    c0 = cpu.begin({})
    assert c0 is not None
    for _ in range(5):          # the kernel's accesses, nested in the launch
        _burn(0.01)
        assert cpu.begin({}) is None
        cpu.end(None)
    during = cpu.total
    assert during >= 0.045 and told, (during, told)   # told before the launch ends
    _burn(0.01)
    cpu.end(c0)
    assert 0.06 <= cpu.total < 0.06 + 0.05, cpu.total  # the same total, counted once
    assert told[-1] <= cpu.total


def test_the_next_outermost_request_starts_afresh():
    cpu = ServingCPU()
    c0 = cpu.begin({})
    _burn(0.01)
    cpu.idle()                  # a JudgeTimeout skipped its end
    _burn(0.02)                 # the tests' own work: not serving
    c1 = cpu.begin({})
    assert c1 is not None
    cpu.end(c1)
    assert cpu.total < 0.01, cpu.total
    assert c0 is not None
