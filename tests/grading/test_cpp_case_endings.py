"""How a C++ case's SIGKILL is told (judge/grading/cpp/verdicts.py): near the cgroup's memory
limit the kernel's reclaim is charged to the case as CPU, so a case the cgroup killed for
memory can read past 0.8 of its CPU limit on a busy host (CI: an ASan build touching 4 GiB,
1.0 s of CPU idle, TLE once beside other work). The cgroup's kill decides, then the CPU."""

from __future__ import annotations

import signal

from judge.grading.cpp.records import Case, Observation, Stream
from judge.grading.cpp.verdicts import RefCase, judge_run
from judge.sandbox.result import SandboxResult

LIMIT = 1.0


def _verdict(sig: int, cpu_s: float, memory_exceeded: bool) -> str:
    ref = [RefCase("case", [Observation("eq", "size", "3")], 0.01)]
    sub = Stream(cases=[Case(0, "case", [Observation("eq", "size", "3")],
                             how=f"signal {sig}", cpu_s=cpu_s)])
    result = SandboxResult(returncode=-sig, signal=sig, stdout=b"", stderr=b"", wall_s=cpu_s,
                           cpu_s=cpu_s, memory_exceeded=memory_exceeded)
    return str(judge_run(ref, sub, result, [LIMIT], lambda i: None)[0].verdict)


def test_a_memory_kill_is_mle_even_when_reclaim_pushed_its_cpu_past_the_limit():
    assert _verdict(signal.SIGKILL, 1.2 * LIMIT, memory_exceeded=True) == "MLE"
    assert _verdict(signal.SIGKILL, 0.1, memory_exceeded=True) == "MLE"


def test_the_cpu_limits_stay_tle():
    assert _verdict(signal.SIGXCPU, 1.0 * LIMIT, memory_exceeded=True) == "TLE"
    assert _verdict(signal.SIGKILL, 1.1 * LIMIT, memory_exceeded=False) == "TLE"


def test_another_sigkill_is_a_crash():
    assert _verdict(signal.SIGKILL, 0.1, memory_exceeded=False) == "RE"
