"""Counters kept in this process, for limits on what one client may cost the server: events per
key in a sliding window, concurrent long-lived responses, and doubling waits after wrong guesses
at a secret. HTTP-free: web.http.throttle builds a server's limits from them, and a practice run's
per-visitor rate (web.services.practice) is one. A restart forgets at most a minute of history."""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque


class SlidingWindow:
    """At most `limit` events per key in any `window_s` seconds."""

    def __init__(self, limit: int, window_s: float, clock=time.monotonic):
        self.limit, self.window_s, self.clock = limit, window_s, clock
        self._events: dict[str, deque] = defaultdict(deque)
        self._lock = threading.Lock()

    def hit(self, key: str) -> float | None:
        """Count one event; None if allowed, else the seconds until one would be."""
        now = self.clock()
        with self._lock:
            q = self._events[key]
            while q and q[0] <= now - self.window_s:
                q.popleft()
            if len(q) >= self.limit:
                return max(0.0, q[0] + self.window_s - now)
            q.append(now)
            if len(self._events) > 100_000:  # never grow without bound under a flood of keys
                self._events = defaultdict(deque, {k: v for k, v in self._events.items() if v})
            return None


class StreamSlots:
    """Concurrent long-lived responses (event streams) per visitor and per client address."""

    def __init__(self, per_visitor: int, per_address: int):
        self.per_visitor, self.per_address = per_visitor, per_address
        self._open: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()

    def try_open(self, visitor: str, address: str | None) -> str | None:
        """Take a slot; None on success, else which limit was hit ("visitor" or "address").
        `address` None: counted per visitor only (a signed-in account)."""
        with self._lock:
            if self._open["v:" + visitor] >= self.per_visitor:
                return "visitor"
            if address is not None and self._open["a:" + address] >= self.per_address:
                return "address"
            self._open["v:" + visitor] += 1
            if address is not None:
                self._open["a:" + address] += 1
            return None

    def close(self, visitor: str, address: str | None) -> None:
        with self._lock:
            for key in ["v:" + visitor] + ([] if address is None else ["a:" + address]):
                self._open[key] -= 1
                if self._open[key] <= 0:
                    del self._open[key]

    def open_count(self) -> int:
        with self._lock:
            return sum(n for k, n in self._open.items() if k.startswith("a:"))


class FailureThrottle:
    """After `free` wrong guesses from one key, each further guess must wait twice as long as
    the one before (1 s, 2 s, 4 s, ... up to `max_wait_s`); a right answer clears the key."""

    def __init__(self, free: int = 5, max_wait_s: float = 60.0, clock=time.monotonic):
        self.free, self.max_wait_s, self.clock = free, max_wait_s, clock
        self._state: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def wait_s(self, key: str) -> float:
        """Seconds this key must still wait before its next guess is even looked at."""
        with self._lock:
            failures, last = self._state.get(key, (0, 0.0))
        if failures < self.free:
            return 0.0
        delay = min(self.max_wait_s, 2.0 ** (failures - self.free))
        return max(0.0, last + delay - self.clock())

    def failed(self, key: str) -> None:
        with self._lock:
            failures, _ = self._state.get(key, (0, 0.0))
            self._state[key] = (failures + 1, self.clock())
            if len(self._state) > 100_000:
                self._state.clear()

    def succeeded(self, key: str) -> None:
        with self._lock:
            self._state.pop(key, None)
