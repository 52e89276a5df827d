"""What a run ended as: the result record, and reading the exit status into verdict flags."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field
from enum import StrEnum

from judge.sandbox.limits import Limits

MEMORY_SIGNS = (b"MemoryError", b"Cannot allocate memory", b"std::bad_alloc",
                b"can't allocate memory", b"out of memory")
SETUP_PREFIXES = {"bwrap": (b"bwrap: ",), "unshare": (b"unshare: ", b"setpriv: ")}


class StopReason(StrEnum):
    """Why the parent ended a run before it exited (watch.py): a limit, or the caller's monitor
    asking for the end (ASKED: not a limit, nothing the command did wrong)."""
    WALL = "wall"
    CPU = "cpu"
    OUTPUT = "output"
    DISK = "disk"
    ASKED = "asked"


@dataclass
class SandboxResult:
    returncode: int | None           # exit status; -N when killed by signal N (as subprocess)
    signal: int | None               # the signal that ended the command, if one did
    stdout: bytes
    stderr: bytes
    wall_s: float
    cpu_s: float | None              # the tree's CPU time (cgroup) or the reaped children's
    wait_s: float | None = None      # how long the tree was held back by a busy CPU (usage.py)
    throttled_s: float | None = None  # how long its CPU quota held it back (cgroup cpu)
    timed_out: bool = False
    timeout_kind: str | None = None  # "wall" | "cpu"
    memory_exceeded: bool = False
    output_exceeded: bool = False
    disk_exceeded: bool = False      # it filled its scratch filesystem (Limits.scratch_mb)
    stopped: bool = False            # the caller's monitor ended it (StopReason.ASKED)
    max_memory_bytes: int | None = None
    setup_error: str | None = None   # the wrapper failed before the command ran
    mode: str = "none"               # "bwrap" | "unshare" | "none"
    uid: int | None = None
    layers: dict = field(default_factory=dict)
    missing_layers: list = field(default_factory=list)
    warnings: list = field(default_factory=list)


def classify(res: SandboxResult, status: int, stop: str | None, mode: str, limits: Limits,
             oom: bool, hit_limit: bool) -> None:
    """Fill in returncode/signal and the flags from the wait status of the direct child, why
    the parent stopped it (``stop``: a StopReason or None) and the cgroup's memory
    events. Where no cgroup is there, a MemoryError-like last word on stderr counts too."""
    if os.WIFSIGNALED(status):
        res.signal = os.WTERMSIG(status)
        res.returncode = -res.signal
    else:
        code = os.WEXITSTATUS(status)
        res.returncode = code
        if mode != "none" and 128 < code <= 128 + 64:  # bwrap and sh report signal N as 128+N
            res.signal, res.returncode = code - 128, -(code - 128)
    if res.returncode == 1 and mode in SETUP_PREFIXES and \
            res.stderr.startswith(SETUP_PREFIXES[mode]):
        res.setup_error = res.stderr.decode(errors="replace").strip()
    if stop == StopReason.ASKED:
        res.stopped = True
    elif stop == StopReason.OUTPUT:
        res.output_exceeded = True
    elif stop == StopReason.DISK:
        res.disk_exceeded = True
    elif stop in (StopReason.WALL, StopReason.CPU):
        res.timed_out, res.timeout_kind = True, stop
    elif res.signal == signal.SIGXCPU or (res.signal == signal.SIGKILL and res.cpu_s
                                          and res.cpu_s >= limits.cpu_s):
        res.timed_out, res.timeout_kind = True, "cpu"
    if not stop:
        killed = res.signal == signal.SIGKILL
        res.memory_exceeded = oom or (hit_limit and killed) or (
            res.returncode != 0 and any(s in res.stderr[-4096:] for s in MEMORY_SIGNS))


