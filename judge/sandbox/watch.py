"""The parent's side of a run: read the child's output with a cap, and enforce the clocks.

One thread, one selector over stdout, stderr and (on Linux) a pidfd that becomes readable
when the child exits. The loop stops at the first of: the child exited and its pipes are
closed; the wall-clock deadline; more output than allowed (the parent stops reading, so its
memory stays bounded by the cap); the tree's CPU time past the limit; the caller's monitor
asking for a stop. The caller then kills whatever is left.

The monitor is how a caller enforces limits of its own on parts of a run (the judge's per-test
CPU limits): it is called every POLL_S (or its own `poll_s`, where it has one) with the tree's
usage and returns None, or why to stop (a StopReason: cpu, wall, disk, or asked when the caller
wants the run over for a reason of its own). It runs on this thread, so it must be quick.
"""

from __future__ import annotations

import os
import selectors
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from judge.sandbox.result import StopReason
from judge.sandbox.usage import TreeMeter, Usage

if TYPE_CHECKING:
    from resource import struct_rusage

CHUNK = 65536
EXIT_GRACE_S = 0.2   # pipes still open this long after the child exited: leftovers hold them
CPU_POLL_S = 0.25    # without a monitor: only the whole run's CPU limit is checked
POLL_S = 0.05        # with one: it also reads the child's progress, so look more often


@dataclass
class Watch:
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    stop: str | None = None          # "wall" | "cpu" | "output" | "disk" | None (it exited)
    status: int | None = None        # from wait4, when the child was reaped inside the loop
    rusage: struct_rusage | None = None
    usage: Usage | None = None       # the last sample taken


def _reap(pid: int, w: Watch) -> bool:
    try:
        got, status, ru = os.wait4(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    if got == pid:
        w.status, w.rusage = status, ru
        return True
    return False


@dataclass
class _Loop:
    """What the loop knows between its turns."""
    pid: int
    bufs: dict[int, bytearray]                        # stdout, stderr: kept up to the cap
    readers: dict[int, Callable[[bytes], object]]
    cap: int
    open_pipes: set[int]
    total: int = 0                                    # bytes read from stdout and stderr
    exited: bool = False
    exited_at: float = 0.0

    def reaped(self, w: Watch) -> None:
        if not self.exited and _reap(self.pid, w):
            self.exited, self.exited_at = True, time.monotonic()


def watch(pid: int, out_fd: int, err_fd: int, *, deadline: float, cap: int,
          cpu_limit_s: float | None = None, meter: TreeMeter | None = None,
          monitor: Callable[[Usage], str | None] | None = None,
          readers: dict[int, Callable[[bytes], object]] | None = None) -> Watch:
    """Run the loop described above. The caller closes ``out_fd``, ``err_fd`` and the
    ``readers`` (more pipes from the child: each chunk goes to its callback, and a callback
    that returns a true value stops the run as "output")."""
    w = Watch()
    sel = selectors.DefaultSelector()
    bufs = {out_fd: w.stdout, err_fd: w.stderr}
    readers = readers or {}
    pidfd = _register(sel, pid, bufs, readers)
    loop = _Loop(pid, bufs, readers, cap, set(bufs) | set(readers))
    # a monitor that answers questions about the run's CPU as they come asks to be called more
    # often (grading/proxied.py: the trusted side waits for a sample taken after its question)
    poll_s = getattr(monitor, "poll_s", POLL_S) if monitor else CPU_POLL_S
    next_cpu = time.monotonic() + poll_s
    poll_cpu = meter is not None and (cpu_limit_s is not None or monitor is not None)

    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                w.stop = "wall"
                break
            timeout = deadline - now
            if poll_cpu or pidfd is None:
                timeout = min(timeout, max(0.0, next_cpu - now) if poll_cpu else 0.02)
            if loop.exited:
                timeout = min(timeout, max(0.0, loop.exited_at + EXIT_GRACE_S - now))
            _read_ready(sel, sel.select(timeout), loop, w)
            if w.stop:
                break
            if pidfd is None:
                loop.reaped(w)
            if loop.exited and (not loop.open_pipes or
                                time.monotonic() >= loop.exited_at + EXIT_GRACE_S):
                break
            if poll_cpu and meter is not None and not loop.exited and \
                    time.monotonic() >= next_cpu:
                next_cpu = time.monotonic() + poll_s
                if _sample(meter, w, cpu_limit_s, monitor):
                    break
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
    return w


def _register(sel: selectors.BaseSelector, pid: int, bufs: dict[int, bytearray],
              readers: dict) -> int | None:
    """The pipes on the selector, and a pidfd that wakes it when the child exits (None where
    there is none: the loop then polls with wait4)."""
    for fd in bufs:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, "pipe")
    for fd in readers:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, "reader")
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(pid)
            sel.register(pidfd, selectors.EVENT_READ, "exit")
            return pidfd
        except OSError:
            return None
    return None


def _read_ready(sel: selectors.BaseSelector, ready, loop: _Loop, w: Watch) -> None:
    """What the selector found ready: the child's exit, a reader's chunk, or output kept up to
    the cap; it returns at the first reason to stop (``w.stop``)."""
    for key, _ in ready:
        if key.data == "exit":
            sel.unregister(key.fd)
            loop.reaped(w)
            continue
        fd = key.fd
        if key.data == "reader":
            if not _read_into(fd, loop.readers[fd], w):
                sel.unregister(fd)
                loop.open_pipes.discard(fd)
            if w.stop:
                return
            continue
        try:
            chunk = os.read(fd, min(CHUNK, loop.cap - loop.total + 1))
        except BlockingIOError:
            continue
        if not chunk:
            sel.unregister(fd)
            loop.open_pipes.discard(fd)
            continue
        room = loop.cap - loop.total
        loop.bufs[fd] += chunk[:max(0, room)]
        loop.total += len(chunk)
        if loop.total > loop.cap:
            w.stop = "output"
            return


def _sample(meter: TreeMeter, w: Watch, cpu_limit_s: float | None,
            monitor: Callable[[Usage], str | None] | None) -> bool:
    """One sample of the tree's usage, against the CPU limit and the caller's monitor: True
    when the run is to stop (``w.stop`` says why)."""
    w.usage = meter.sample()
    used = w.usage.cpu_s
    if cpu_limit_s is not None and used is not None and used > cpu_limit_s + 0.5:
        w.stop = "cpu"
        return True
    why = monitor(w.usage) if monitor else None
    if why:
        w.stop = why if why in (StopReason.CPU, StopReason.DISK,
                                StopReason.ASKED) else StopReason.WALL
        return True
    return False


def _read_into(fd: int, callback, w: Watch) -> bool:
    """One chunk from a reader pipe to its callback; False at its end."""
    try:
        chunk = os.read(fd, CHUNK)
    except BlockingIOError:
        return True
    except OSError:
        return False
    if not chunk:
        return False
    if callback(chunk) and not w.stop:
        w.stop = "output"
    return True


def drain(readers: dict[int, Callable[[bytes], object]] | None, w: Watch) -> None:
    """What the child wrote to the reader pipes before it was stopped, once it is dead."""
    for fd, callback in (readers or {}).items():
        for _ in range(4096):  # at most CHUNK * 4096 bytes: pipes hold far less
            try:
                os.set_blocking(fd, False)
                chunk = os.read(fd, CHUNK)
            except OSError:
                break
            if not chunk or callback(chunk):
                break
