"""The runner's own threads (its CPU watchdogs), which never run the tests' code: the call
proxy still sends a test's object's plain attributes with its handle while only these run
beside the main thread (proxy/snapshots.py). A module of its own, so that a native run's
runner, which never loads the proxy, registers them at no import cost."""

from __future__ import annotations

import threading
import weakref

_RUNNER: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def runner_thread(thread: threading.Thread) -> threading.Thread:
    _RUNNER.add(thread)
    return thread


def others_alive() -> int:
    """Threads alive that are neither the main one nor the runner's own."""
    return threading.active_count() - 1 - sum(1 for t in list(_RUNNER) if t.is_alive())
