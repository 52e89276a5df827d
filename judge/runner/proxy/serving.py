"""The trusted side's CPU time spent serving the submission's requests (docs/IMPORTED_GRADING.md,
"The trusted side's serving CPU"): what the suite's CPU limits do not charge to the submission.

A gpusim kernel's every simulated access is a request the trusted process serves (the
simulator's accounting runs there), so a kernel that makes more accesses than the reference's
made the trusted process's CPU grow with it, and the limits, which count both processes, ended
it as TLE where the handbook's one process reaches its assertion: WA. The CPU of the tests'
process spent answering a request of the submission is not the submission's code's; it is
measured here, per thread (`time.thread_time` around the outermost request a thread serves,
from the read of its frame on where the thread read it, so a callback nested in it is counted
once), by the trusted process, never by the submission's. Reported to the grader on the
control pipe (`served <seconds>`) whenever it grew by REPORT_S since the last report; the
grader subtracts it from the trusted sandbox's CPU (bounded by it), and the runner's own
per-test watchdog from its process's.

The submission's own CPU, measured outside its sandbox, is charged whole, including what each
of its requests costs it: a submission that floods the trusted side with requests pays for
them, and what is subtracted is at most the trusted process's CPU."""

from __future__ import annotations

import threading
import time
from typing import Callable

REPORT_S = 0.01


class ServingCPU:
    def __init__(self):
        self.total = 0.0
        self.reported = 0.0
        self.report: Callable[[float], None] | None = None
        self.lock = threading.Lock()
        self.tl = threading.local()

    def now(self) -> float:
        return time.thread_time()

    def read_at(self, c0: float, m: dict) -> None:
        """Message `m` was read from `c0` (this thread's CPU time) on: if it is a request,
        serving it started then (reading and parsing its frame are part of it)."""
        self.tl.read = (c0, m)

    def begin(self, m: dict) -> float | None:
        """Serving request `m` starts: this thread's CPU time then, when it is the outermost
        request the thread serves (else None: the outer one counts this one)."""
        read = self.tl.__dict__.pop("read", None)
        if getattr(self.tl, "busy", False):
            # a request nested in the outermost one (a gpusim launch serving its kernel's
            # accesses, seconds long): what the outer one has cost so far is told now, not at
            # its end, else the grader charges it meanwhile and, never going back, charges the
            # next test nothing (cu-reduction's second test got a reference time of 0.0 s)
            self._so_far()
            return None
        self.tl.busy = True
        c0 = read[0] if read is not None and read[1] is m else time.thread_time()
        self.tl.since = c0
        return c0

    def end(self, c0: float | None) -> None:
        """The request whose `begin` gave `c0` is answered."""
        if c0 is not None:
            self.tl.busy = False
            self.add(time.thread_time() - self.tl.__dict__.pop("since", c0))

    def idle(self) -> None:
        """This thread serves nothing now (an exception raised into a serve, a JudgeTimeout,
        skipped its `end`)."""
        self.tl.busy = False
        self.tl.__dict__.pop("read", None)
        self.tl.__dict__.pop("since", None)

    def _so_far(self) -> None:
        """Adds the CPU the outermost request of this thread has used since it was last added."""
        since = getattr(self.tl, "since", None)
        if since is not None:
            now = time.thread_time()
            self.tl.since = now
            self.add(now - since)

    def add(self, seconds: float) -> None:
        with self.lock:
            self.total += max(0.0, seconds)
            if self.report is not None and self.total - self.reported >= REPORT_S:
                self.reported = self.total
                self.report(self.total)
