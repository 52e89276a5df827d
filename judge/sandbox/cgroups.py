"""Per-run control groups: a memory cap, a process cap, a CPU quota, CPU accounting and a
whole-tree kill.

Both hierarchies are handled. cgroup v1 (one mount per controller, as on the judge machines)
and cgroup v2 (one unified tree). A run's groups are created as children of the groups the
judge process itself is in, so the judge never moves out of what its own supervisor set up,
and they are removed when the run ends. When no usable hierarchy is found the caller falls
back to RLIMIT_AS for memory and RLIMIT_NPROC for processes.

The CPU quota is what keeps one run from starving the host: time limits are CPU time, so a
submission that forks spinners does not get a verdict any sooner, but without a quota it takes
every core while it runs. A run may use ``cpus`` cores' worth of time per period (v1
``cpu.cfs_quota_us``, v2 ``cpu.max``) and has half a normal group's weight when cores are
contended (``cpu.shares`` 512, ``cpu.weight`` 50), so the judge and the web server stay ahead.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass, field

PREFIX = "judge-sb-"
_counter = itertools.count()
CPU_PERIOD_US = 100_000
V1_CONTROLLERS = ("memory", "pids", "cpuacct", "cpu")
V2_CONTROLLERS = ("memory", "pids", "cpu")


@dataclass
class Hierarchy:
    """Where to create run groups: ``version`` 'v1' or 'v2', and a base dir per controller."""

    version: str
    bases: dict[str, str]  # v1: {"memory": dir, "pids": dir, "cpuacct": dir, "cpu": dir};
    #                        v2: {"": dir}
    v2_controllers: frozenset[str] = frozenset()  # v2: the ones enabled for child groups

    @property
    def has_memory(self) -> bool:
        return "memory" in (self.v2_controllers if self.version == "v2" else self.bases)

    @property
    def has_pids(self) -> bool:
        return "pids" in (self.v2_controllers if self.version == "v2" else self.bases)

    @property
    def has_cpu(self) -> bool:
        return "cpu" in (self.v2_controllers if self.version == "v2" else self.bases)


def _mounts() -> list[tuple[str, str, set[str]]]:
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
                out.append((parts[2], parts[1], set(parts[3].split(","))))
    return out


def _own_paths() -> dict[str, str]:
    """controller -> our cgroup path; key '' is the v2 path."""
    out = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in ctrls.split(",") if ctrls else [""]:
                out[c] = path
    return out


def detect() -> tuple[Hierarchy | None, str]:
    """Find a writable hierarchy with a memory controller. Returns (hierarchy, sentence)."""
    if not os.path.exists("/proc/self/cgroup"):
        return None, "no /proc/self/cgroup: not Linux, so no control groups"
    try:
        mounts, own = _mounts(), _own_paths()
    except OSError as e:
        return None, f"cannot read the cgroup setup: {e}"
    v1 = {}
    for kind, mnt, opts in mounts:
        if kind == "cgroup":
            for ctrl in V1_CONTROLLERS:
                if ctrl in opts and ctrl in own and ctrl not in v1:
                    v1[ctrl] = os.path.join(mnt, own[ctrl].lstrip("/"))
    if "memory" in v1:
        h = Hierarchy("v1", {c: d for c, d in v1.items() if os.access(d, os.W_OK)})
        if "memory" in h.bases:
            return h, ("cgroup v1: memory" + (", pids" if h.has_pids else "")
                       + (", cpuacct" if "cpuacct" in h.bases else "")
                       + (", cpu" if h.has_cpu else "")
                       + f" groups are created under {h.bases['memory']}")
        return None, f"cgroup v1 memory controller at {v1['memory']} is not writable"
    for kind, mnt, _ in mounts:
        if kind != "cgroup2" or "" not in own:
            continue
        base = os.path.join(mnt, own[""].lstrip("/"))
        try:
            with open(os.path.join(mnt, "cgroup.controllers")) as f:
                if "memory" not in f.read().split():
                    continue
            ctrls = _enable_v2(base)
            if "memory" not in ctrls or not os.access(base, os.W_OK):
                return None, (f"cgroup v2 at {base}: cannot enable the memory controller "
                              "for child groups (the judge's own group holds processes, or "
                              "is not delegated to us)")
        except OSError as e:
            return None, f"cgroup v2 at {base} is not usable: {e}"
        return (Hierarchy("v2", {"": base}, frozenset(ctrls)),
                f"cgroup v2: {', '.join(sorted(ctrls))} groups are created under {base}")
    return None, "no cgroup hierarchy with a memory controller is mounted"


def _enable_v2(base: str) -> set[str]:
    """Enable memory, pids and cpu for the children of ``base``; returns those enabled."""
    path = os.path.join(base, "cgroup.subtree_control")
    with open(path) as f:
        have = set(f.read().split())
    for ctrl in V2_CONTROLLERS:
        if ctrl not in have:
            try:
                _write(path, f"+{ctrl}")
                have.add(ctrl)
            except OSError:
                pass
    return have & set(V2_CONTROLLERS)


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _keyed(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if v.strip().isdigit():
            out[k] = int(v)
    return out


@dataclass
class RunGroup:
    """The groups of one run (one dir per v1 controller, or one v2 dir)."""

    hierarchy: Hierarchy
    dirs: dict[str, str] = field(default_factory=dict)

    @classmethod
    def create(cls, h: Hierarchy, memory_bytes: int, pids: int,
               cpus: float | None = None) -> "RunGroup":
        """``cpus``: the CPU quota in cores (None: no quota)."""
        name = f"{PREFIX}{os.getpid()}-{next(_counter)}"
        g = cls(h)
        try:
            for ctrl, base in h.bases.items():
                d = os.path.join(base, name)
                if d not in g.dirs.values():  # co-mounted controllers (cpu,cpuacct) share one
                    os.mkdir(d)
                g.dirs[ctrl] = d
            if h.version == "v1":
                m = g.dirs["memory"]
                _write(f"{m}/memory.limit_in_bytes", str(memory_bytes))
                if os.path.exists(f"{m}/memory.memsw.limit_in_bytes"):
                    _write(f"{m}/memory.memsw.limit_in_bytes", str(memory_bytes))  # no swap
                if "pids" in g.dirs:
                    _write(f"{g.dirs['pids']}/pids.max", str(pids))
                if "cpu" in g.dirs and cpus:
                    c = g.dirs["cpu"]
                    _write(f"{c}/cpu.cfs_period_us", str(CPU_PERIOD_US))
                    _write(f"{c}/cpu.cfs_quota_us", str(_quota_us(cpus)))
                    _write(f"{c}/cpu.shares", "512")
            else:
                d = g.dirs[""]
                _write(f"{d}/memory.max", str(memory_bytes))
                if os.path.exists(f"{d}/memory.swap.max"):
                    _write(f"{d}/memory.swap.max", "0")
                if h.has_pids:
                    _write(f"{d}/pids.max", str(pids))
                if h.has_cpu and cpus:
                    _write(f"{d}/cpu.max", f"{_quota_us(cpus)} {CPU_PERIOD_US}")
                    _write(f"{d}/cpu.weight", "50")
        except BaseException:
            g.remove()
            raise
        return g

    def add(self, pid: int) -> None:
        for d in self.dirs.values():
            _write(f"{d}/cgroup.procs", str(pid))

    def pids(self) -> list[int]:
        d = (self.dirs.get("pids") or self.dirs.get("") or self.dirs.get("memory")
             or next(iter(self.dirs.values()), None))
        return [int(x) for x in _read(f"{d}/cgroup.procs").split()] if d else []

    def tasks(self) -> list[int]:
        """Every thread in the group (run-queue delay is kept per thread, not per process)."""
        if self.hierarchy.version == "v2":
            path = f"{self.dirs['']}/cgroup.threads"
        else:
            d = self.dirs.get("cpuacct") or self.dirs.get("memory")
            path = f"{d}/tasks" if d else ""
        return [int(x) for x in _read(path).split()] if path else []

    def kill(self) -> bool:
        """SIGKILL everything in the group; True when it is empty."""
        d = self.dirs.get("")
        if d and os.path.exists(f"{d}/cgroup.kill"):
            try:
                _write(f"{d}/cgroup.kill", "1")
            except OSError:
                pass
        for r in range(100):
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.001 * min(r + 1, 20))
        return not self.pids()

    def cpu_s(self) -> float | None:
        if self.hierarchy.version == "v2":
            usec = _keyed(_read(f"{self.dirs['']}/cpu.stat")).get("usage_usec")
            return usec / 1e6 if usec is not None else None
        if "cpuacct" in self.dirs:
            ns = _read(f"{self.dirs['cpuacct']}/cpuacct.usage").strip()
            return int(ns) / 1e9 if ns.isdigit() else None
        return None

    def throttled_s(self) -> float | None:
        """How long the CPU quota held the group back (None: no cpu controller)."""
        if self.hierarchy.version == "v2":
            if not self.hierarchy.has_cpu:
                return None
            usec = _keyed(_read(f"{self.dirs['']}/cpu.stat")).get("throttled_usec")
            return usec / 1e6 if usec is not None else None
        if "cpu" not in self.dirs:
            return None
        ns = _keyed(_read(f"{self.dirs['cpu']}/cpu.stat")).get("throttled_time")
        return ns / 1e9 if ns is not None else None

    def memory_stats(self) -> tuple[bool, bool, int | None]:
        """(an OOM kill happened, the limit was reached at least once, peak bytes).

        Reaching the limit alone is normal (page cache is reclaimed there); only together with
        a SIGKILL the parent did not send does it say the run died for memory.
        """
        if self.hierarchy.version == "v2":
            d = self.dirs[""]
            ev = _keyed(_read(f"{d}/memory.events"))
            peak = _read(f"{d}/memory.peak").strip()
            return (ev.get("oom_kill", 0) > 0, ev.get("max", 0) > 0,
                    int(peak) if peak.isdigit() else None)
        m = self.dirs["memory"]
        oom = _keyed(_read(f"{m}/memory.oom_control")).get("oom_kill", 0)
        fail = _read(f"{m}/memory.failcnt").strip()
        peak = _read(f"{m}/memory.max_usage_in_bytes").strip()
        return (oom > 0, fail.isdigit() and int(fail) > 0,
                int(peak) if peak.isdigit() else None)

    def remove(self) -> None:
        for d in dict.fromkeys(self.dirs.values()):
            for attempt in range(50):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    self.kill()
                    time.sleep(0.002)
        self.dirs.clear()


def _quota_us(cpus: float) -> int:
    return max(1000, int(cpus * CPU_PERIOD_US))


def remove_stale(h: Hierarchy) -> None:
    """Remove run groups left by judge processes that died mid-run."""
    for base in h.bases.values():
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            if not name.startswith(PREFIX):
                continue
            pid = name[len(PREFIX):].split("-")[0]
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                g = RunGroup(h, {"x": os.path.join(base, name)})
                g.kill()
                g.remove()


def for_run(hierarchy: Hierarchy | None, memory_bytes: int, processes: int, cpus,
            cuda: bool, warnings: list[str], layers: dict) -> RunGroup | None:
    """A run's group (memory, pids, cpu), or None, a warning saying why, where rlimits stand in;
    ``layers`` gets which controllers hold the run and what limits its memory."""
    group = None
    if hierarchy:
        try:
            group = RunGroup.create(hierarchy, memory_bytes, processes, cpus=cpus)
        except OSError as e:
            warnings.append(f"could not create the run's cgroup ({e}); using rlimits")
    h = group.hierarchy if group else None
    layers.update(cgroup=h.version if h else None, cgroup_memory=bool(h and h.has_memory),
                  cgroup_pids=bool(h and h.has_pids), cgroup_cpu=bool(h and h.has_cpu))
    layers["memory_limit"] = (f"cgroup-{h.version}" if h and layers["cgroup_memory"] else
                              ("none (cuda)" if cuda else "rlimit_as"))
    return group
