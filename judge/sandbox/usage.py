"""What a run's process tree has taken from the machine: CPU time, and time spent waiting for a CPU.

CPU time is what time limits are measured in, because another job on the host does not change
it. The wait is what lets a caller tell a starved run from one that sleeps: a thread that is
runnable but not running accrues run-queue delay (second field of /proc/<tid>/schedstat), a
sleeping or blocked one does not.

Sources, best first: the run's cgroup (cpuacct.usage or cpu.stat, and its thread list); else
the processes under the run's first process as /proc shows them (this misses a process that
left the tree by double-forking where there is no pid namespace). Without /proc (macOS) only
the cgroup could help, and there is none: ``cpu_s`` is then None.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Usage:
    wall_s: float           # since the run started
    cpu_s: float | None     # user + system time of the whole tree; None: not measurable here
    wait_s: float = 0.0     # time the tree was held back by the scheduler (see TreeMeter)


class TreeMeter:
    """Samples one run. ``wait_s`` adds up, sample by sample, the largest run-queue delay any
    single thread of the tree accrued in between: per thread rather than summed, so N starved
    threads do not count N times, and a busy host shows up even when only one thread runs."""

    def __init__(self, pid: int, group=None, start: float | None = None):
        self.pid, self.group = pid, group
        self.start = time.monotonic() if start is None else start
        self._proc = os.path.isdir("/proc/self")
        self._cpu = 0.0
        self._delays: dict[int, int] = {}
        self._wait_ns = 0

    def sample(self) -> Usage:
        wall = time.monotonic() - self.start
        cpu = self.group.cpu_s() if self.group else None
        if not self._proc:
            return Usage(wall, cpu)
        tids = self.group.tasks() if self.group else None
        if cpu is None or tids is None:
            tree = _proc_tree(self.pid)
            if cpu is None:
                cpu = sum(tree.values()) / CLK_TCK
            if tids is None:
                tids = [t for pid in tree for t in _threads(pid)]
        # processes that exit take their share out of a /proc sum: never let the figure drop
        self._cpu = max(self._cpu, cpu)
        self._track_wait(tids)
        return Usage(wall, self._cpu, self._wait_ns / 1e9)

    def _track_wait(self, tids: list[int]) -> None:
        now: dict[int, int] = {}
        grew = 0
        for tid in tids:
            delay = _run_delay_ns(tid)
            if delay is None:
                continue
            now[tid] = delay
            grew = max(grew, delay - self._delays.get(tid, 0))
        self._delays = now
        self._wait_ns += grew


def _run_delay_ns(tid: int) -> int | None:
    try:
        with open(f"/proc/{tid}/schedstat", "rb") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _threads(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except (OSError, ValueError):
        return []


def _proc_tree(root: int) -> dict[int, int]:
    """{pid: clock ticks of its own CPU time plus that of the children it has reaped} for
    ``root`` and everything under it."""
    children: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                rest = f.read().rsplit(b")", 1)[1].split()
            pid, ppid = int(name), int(rest[1])
            ticks[pid] = sum(int(x) for x in rest[11:15])  # utime stime cutime cstime
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(pid)
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in ticks and pid not in out:
            out[pid] = ticks[pid]
            todo += children.get(pid, [])
    return out
