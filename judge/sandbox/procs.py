"""The process and descriptor plumbing of a sandboxed run, one home for both of its paths
(run.py's cold run, forkserver.py's warm fork): the pipes a run's output comes through, the
kill of what is left of it, and the guard that stops a run whose scratch filesystem is full."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal

from judge.sandbox import accounts, scratchfs

# Descriptors a command inherits start here, clear of the ones the wrapper shells use (0-3).
FIRST_PASSED_FD = 10


def pipe(fds: list[int]) -> tuple[int, int]:
    """A pipe whose two ends are recorded in ``fds``, so a failure closes them (``close``)."""
    r, w = os.pipe()
    fds += [r, w]
    return r, w


def high(fd: int) -> int:
    """``fd`` renumbered >= FIRST_PASSED_FD and inheritable (the original is closed)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, FIRST_PASSED_FD)
    os.close(fd)
    os.set_inheritable(moved, True)
    return moved


def close(fd: int, fds: list[int] | None = None) -> None:
    """Close ``fd``; with ``fds``, only if it is still recorded there (and take it off)."""
    if fds is not None:
        if fd not in fds:
            return
        fds.remove(fd)
    with contextlib.suppress(OSError):
        os.close(fd)


def kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def stop_tree(pid: int, group) -> None:
    """A run stopped by a limit: its first process, then everything in its cgroup, killed
    before its pipes are closed. The first process's death reaches the rest of the tree only
    a moment later (bwrap's --die-with-parent, a pid namespace's end), and a process still
    running when its stdout closes gets EPIPE: a submission stopped for its output then
    answered the tests' call with BrokenPipeError, graded RE, not OLE (1 grading in 15 at
    load 8). `cleanup` still follows, for a run with no cgroup too."""
    kill(pid)
    if group:
        group.kill()


def cleanup(group, acct, pgid: int | None = None) -> bool:
    """Kill everything left of the run; True if something survived."""
    left = False
    if pgid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    if group:
        left |= not group.kill()
        group.remove()
    if acct.dropped:
        left |= not accounts.kill_uid(acct.uid)
    return left


def disk_guard(path: str, monitor):
    """``monitor`` wrapped so that a full scratch filesystem at ``path`` stops the run, as too
    much output does."""
    def guard(u):
        if scratchfs.full(path):
            return "disk"
        return monitor(u) if monitor else None
    if hasattr(monitor, "poll_s"):  # how often it asks to be called (watch.py)
        guard.poll_s = monitor.poll_s  # type: ignore[attr-defined]
    return guard
