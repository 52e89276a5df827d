"""The small parts of a warm fork's run that are not the fork server itself: which commands a
fork can run (the runner or ``python -c``; anything else runs cold), the zygote's answer on a
fork's gate (its wait status, and whether it filled its scratch filesystem), the disk guard, and
the descriptor plumbing the fork server hands to a fork."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

from judge.sandbox import accounts
from judge.sandbox.run import FIRST_PASSED_FD

GATE_TIMEOUT_S = 10.0


def _status(gate: socket.socket) -> tuple[int | None, bool]:
    """(the fork's wait status as the zygote reaped it, whether it left its scratch
    filesystem full: the fork looks before the filesystem goes with its namespace)."""
    gate.settimeout(GATE_TIMEOUT_S)
    full = False
    try:
        while True:
            msg = gate.recv(1 << 12)
            if not msg:
                return None, full
            data = json.loads(msg)
            full = full or bool(data.get("disk_full"))
            if "status" in data:
                return int(data["status"]), full
    except (OSError, ValueError, TypeError):
        return None, full


def _disk_guard(path: str, monitor):
    def guard(u):
        if _full(path):
            return "disk"
        return monitor(u) if monitor else None
    return guard


def _full(path: str) -> bool:
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bfree == 0 or st.f_ffree == 0


def _cleanup(group, acct) -> bool:
    left = False
    if group:
        left |= not group.kill()
        group.remove()
    left |= not accounts.kill_uid(acct.uid)
    return left


def _high(fd: int) -> int:
    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD, FIRST_PASSED_FD)
    os.close(fd)
    os.set_inheritable(high, True)
    return high


def _pipe(fds: list[int]) -> tuple[int, int]:
    r, w = os.pipe()
    fds += [r, w]
    return r, w


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _close(fd: int, fds: list[int] | None = None) -> None:
    if fds is not None:
        if fd not in fds:
            return
        fds.remove(fd)
    try:
        os.close(fd)
    except OSError:
        pass


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


INTERPRETER_FLAGS = {"-P", "-s", "-S", "-B", "-u", "-E"}


def _program(argv: list[str]) -> dict | None:
    """What the fork runs for ``argv``: {"runner_args": [...]} for ``python [flags] -m
    judge_runner ARGS``, {"code": ..., "args": [...]} for ``python [flags] -c CODE ARGS``,
    None for anything else (it runs cold)."""
    if not argv or os.path.realpath(argv[0]) != os.path.realpath(sys.executable):
        return None
    i = 1
    while i < len(argv) and argv[i] in INTERPRETER_FLAGS:
        i += 1
    rest = argv[i:]
    if rest[:2] == ["-m", "judge_runner"]:
        return {"runner_args": rest[2:]}
    if len(rest) >= 2 and rest[0] == "-c":
        return {"code": rest[1], "args": rest[2:]}
    return None
