"""Resource limits for one sandboxed run, and the rlimits that carry them into the child.

The rlimits are set on the gated child by the parent (``prlimit(2)`` on Linux) before it is
allowed to exec anything, so every process the submission starts inherits them. Where
``prlimit`` does not exist (macOS) they are set in the child with ``setrlimit`` instead.
"""

from __future__ import annotations

import math
import resource
from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """What one run may use. Sizes are in MiB (``output_bytes`` in bytes)."""

    wall_s: float = 60.0          # wall clock, enforced by the parent
    cpu_s: float = 60.0           # CPU seconds per process (RLIMIT_CPU) and for the tree (cgroup)
    memory_mb: int = 2048         # cgroup memory limit; RLIMIT_AS when no cgroup is usable
    processes: int = 64           # processes/threads the submission may have at once
    file_size_mb: int = 16        # largest file it may write (RLIMIT_FSIZE)
    open_files: int = 256         # RLIMIT_NOFILE
    output_bytes: int = 256_000   # stdout + stderr the parent reads before it stops the run
    tmp_mb: int = 64              # size of the private /tmp and /dev/shm (bwrap only)
    cpus: float = 1.0             # CPU quota in cores (cgroup cpu controller), not a time limit
    # A filesystem of the run's own on the scratch dir (tmpfs, root only): its size and number
    # of files. None: the scratch dir is used as it is (a host folder; its files stay after).
    scratch_mb: int | None = None
    scratch_files: int | None = None

    def __post_init__(self) -> None:
        for name in ("wall_s", "cpu_s", "memory_mb", "processes", "file_size_mb",
                     "open_files", "output_bytes", "tmp_mb", "cpus"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)!r}")
        for name in ("scratch_mb", "scratch_files"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"Limits.{name} must be positive or None, got {value!r}")

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_mb) * MIB


def rlimits_for(limits: Limits, *, nproc: int | None, address_space: bool,
                cuda: bool = False) -> dict[int, tuple[int, int]]:
    """The rlimits to apply: resource id -> (soft, hard).

    ``nproc`` is the RLIMIT_NPROC value (None: leave it; it only works for a uid of our own).
    ``address_space`` caps RLIMIT_AS at the memory limit: the fallback when no cgroup memory
    controller is usable. CUDA reserves huge virtual ranges, so it is never set for CUDA runs.
    """
    cpu = max(1, math.ceil(limits.cpu_s))
    out: dict[int, tuple[int, int]] = {
        resource.RLIMIT_CPU: (cpu, cpu + 1),  # SIGXCPU at the limit, SIGKILL a second later
        resource.RLIMIT_FSIZE: (limits.file_size_mb * MIB,) * 2,
        resource.RLIMIT_NOFILE: (limits.open_files,) * 2,
        resource.RLIMIT_CORE: (0, 0),
    }
    if nproc is not None:
        out[resource.RLIMIT_NPROC] = (nproc, nproc)
    if address_space and not cuda:
        out[resource.RLIMIT_AS] = (limits.memory_bytes,) * 2
    return out


def _clamped(rid: int, soft: int, hard: int) -> tuple[int, int]:
    """Never ask for more than the current hard limit (that would fail without privilege)."""
    _, cur_hard = resource.getrlimit(rid)
    if cur_hard != resource.RLIM_INFINITY:
        hard = min(hard, cur_hard)
        soft = min(soft, hard)
    return soft, hard


def apply_to_pid(pid: int, rlimits: dict[int, tuple[int, int]]) -> None:
    """Set rlimits on another (gated, not yet exec'd) process. Linux only."""
    for rid, (soft, hard) in rlimits.items():
        resource.prlimit(pid, rid, _clamped(rid, soft, hard))


def apply_to_self(rlimits: dict[int, tuple[int, int]]) -> None:
    """Set rlimits on the calling process (used in a pre-exec hook where prlimit is missing).

    RLIMIT_AS and RLIMIT_NPROC are best effort here: macOS refuses some values of them.
    """
    optional = {getattr(resource, "RLIMIT_AS", None), getattr(resource, "RLIMIT_NPROC", None)}
    for rid, (soft, hard) in rlimits.items():
        try:
            resource.setrlimit(rid, _clamped(rid, soft, hard))
        except (ValueError, OSError):
            if rid not in optional:
                raise


def can_prlimit() -> bool:
    return hasattr(resource, "prlimit")
