"""What the parent does with a suite run's results pipe while the run goes on, for the plain
runner and the proxied one's trusted side alike (launch.py): the bytes are only kept as they
arrive (the sandbox's reader thread must not parse hostile input at its pace); at each of the
watch's samples they are fed to the run's log, each event to the phase clock (which may stop the
run) and to the live-progress callback.
"""

from __future__ import annotations

import logging
from typing import Callable

from judge.judging.child_log import MAX_RESULTS_BYTES
from judge.judging.clock import PhaseClock
from judge.judging.clock import Usage as ClockUsage
from judge.judging.run_record import RunRecord
from judge.sandbox.result import StopReason
from judge.sandbox.usage import Usage

log_ = logging.getLogger("judge")


class ResultsPump:
    def __init__(self, out: RunRecord, clock: PhaseClock, on_events, stop,
                 usage: Callable[[Usage], Usage] = lambda u: u):
        """``usage`` turns a sample of the sandbox's usage into what the clock counts (the
        proxied run adds the submission's process's CPU)."""
        self.out, self.clock, self.on_events, self.stop = out, clock, on_events, stop
        self.usage = usage
        self.pending = bytearray()
        self.received = 0

    def take(self, chunk: bytes) -> bool:
        """The sandbox's reader: True (stop the run: OLE) past MAX_RESULTS_BYTES."""
        self.received += len(chunk)
        if self.received > MAX_RESULTS_BYTES:
            return True
        self.pending.extend(chunk)
        return False

    def pump(self, u: ClockUsage) -> None:
        self.out.wall_s = max(self.out.wall_s, u.wall_s)
        data = bytes(self.pending)
        self.pending.clear()
        events = self.out.log.feed(data) if data else []
        for ev in events:
            self.clock.event(ev, u)
        if events and self.on_events is not None:
            try:
                self.on_events(events, self.out)
            except Exception:  # live progress only: the final judgement does not need it
                log_.exception("on_events failed")

    def monitor(self, u: Usage) -> str | None:
        u = self.usage(u)
        self.pump(u)
        if self.stop is not None and self.stop.is_set():
            return StopReason.ASKED
        return self.clock.check(u)
