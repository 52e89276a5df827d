"""``run_sandboxed``: run one command under every layer that works here, and say what happened.

How a run goes (Linux, as root, bwrap available):

1. take a free slot uid (accounts), mount the run's own filesystem on the scratch dir where
   the caller asked for one (scratchfs), create the run's cgroups (cgroups), chown the
   scratch dir;
2. start ``/bin/sh`` as that uid, blocked reading a "go" line on its stdin (the *gate*);
3. the parent moves it into the cgroups and sets its rlimits with prlimit, then writes "go":
   the gate execs bwrap, which execs the command. Everything the submission ever starts is
   therefore inside the limits from its first instruction, without a pre-exec Python hook
   (unsafe in a threaded parent) and without a second Python start;
4. the parent reads stdout/stderr with a cap and watches the clocks (watch): the tree's CPU
   time and run-queue wait (usage), and whatever a caller's ``monitor`` adds;
5. at the end it kills what is left: bwrap (its pid namespace dies with it), the cgroup, and
   every process of the slot's uid, removes the cgroups and unmounts the scratch filesystem
   (whatever the run wrote there is gone).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from judge.sandbox import (
    accounts,
    bwrap,
    cgroups,
    grants,
    pid1,
    scratchfs,
    seccomp,
    system_image,
    unshare,
)
from judge.sandbox import limits as limits_mod
from judge.sandbox.layers import SECURITY_LAYERS, Probe, mode_layers, probe_layers
from judge.sandbox.limits import Limits
from judge.sandbox.paths import check_reachable, normalize_binds
from judge.sandbox.procs import FIRST_PASSED_FD, cleanup, close, disk_guard, kill, pipe, stop_tree
from judge.sandbox.result import SandboxResult, classify
from judge.sandbox.usage import TreeMeter
from judge.sandbox.watch import Watch, drain, watch

GATE = 'IFS= read -r go || exit 125; [ "$go" = go ] || exit 125; unset PWD OLDPWD; ' \
       'exec "$@" </dev/null'
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
            "OMP_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2"}
# Processes of the wrapper itself that count against RLIMIT_NPROC and pids.max: bwrap's
# outer process and the pid-1 shell; for unshare, unshare itself (root, but in the cgroup)
# and the shell. Plus a little slack.
WRAPPER_PROCS = {"bwrap": 2 + 2, "unshare": 2 + 2, "none": 0 + 2}
DEFAULT_SCRATCH_FILES = 10_000


class SandboxError(RuntimeError):
    """The sandbox could not be set up (a judge problem, not the submission's)."""


@dataclass
class _Job:
    """One call of run_sandboxed, its arguments checked (see its docstring for each)."""
    argv: list[str]
    scratch: str                       # absolute
    binds: list[tuple[str, str]]       # (host path, path inside)
    env: dict[str, str]                # the command's environment, complete
    limits: Limits
    device: str
    monitor: Callable | None
    owned: list[int]                   # passed descriptors, closed by run_sandboxed
    readers: dict
    warnings: list[str] = field(default_factory=list)
    rw_binds: list[tuple[str, str]] = field(default_factory=list)
    allow: frozenset[str] = frozenset()   # seccomp.ALLOWABLE names this run may use


def run_sandboxed(argv: Sequence[str], ro_binds: Iterable[tuple[str, str] | str] = (),
                  scratch: str | None = None, env: dict[str, str] | None = None,
                  limits: Limits | None = None, device: str = "cpu", *,
                  isolation: str = "auto", monitor=None, pass_fds: Sequence[int] = (),
                  readers: dict | None = None,
                  rw_binds: Iterable[tuple[str, str] | str] = (),
                  allow_syscalls: Iterable[str] = ()) -> SandboxResult:
    """Run ``argv`` with ``scratch`` as cwd and only writable place; see the module doc.

    ``ro_binds``: (host_path, inside_path) pairs or plain paths (same path inside). Without
    bwrap nothing is hidden, and a bind cannot move a path: use the same path inside.
    ``isolation``: "auto" (the best that works), or "bwrap" / "unshare" / "none" to force one.
    ``monitor``: called with a ``Usage`` about every 50 ms while the command runs; it returns
    None, or a ``StopReason`` to stop the run: CPU / WALL (``result.timeout_kind`` is then that
    word), or ASKED, the caller's own reason (``result.stopped``; no limit flag is set).
    With ``limits.scratch_mb`` set, the scratch dir gets a filesystem of the run's own for the
    length of the run (see scratchfs): the run is stopped when it fills it
    (``result.disk_exceeded``), and nothing written there is left afterwards.
    ``pass_fds``: descriptors (>= FIRST_PASSED_FD, see ``child_pipe``) the command inherits
    under the same numbers; run_sandboxed closes the parent's copies, also when it fails.
    ``readers``: {read end: callback(bytes)}, fed as data arrives and once more after the
    run ends; a callback that returns a true value stops the run as output_exceeded. The
    caller closes these.
    ``rw_binds``: writable folders besides the scratch dir, as ``ro_binds`` (same path inside
    without bwrap): a folder two sandboxes of one grading share (grading/proxied.py). The
    caller owns it: its size cap, its modes, its removal.
    ``allow_syscalls``: names of ``seccomp.ALLOWABLE`` the run's filter lets through (a C++
    run with LeakSanitizer needs ptrace); the rest of the filter is the same.
    """
    owned = list(pass_fds)
    try:
        return _checked(argv, ro_binds, scratch, env, limits, device, isolation=isolation,
                        monitor=monitor, owned=owned, readers=dict(readers or {}),
                        rw_binds=rw_binds, allow=frozenset(allow_syscalls))
    finally:
        for fd in owned:
            close(fd)


def child_pipe() -> tuple[int, int]:
    """(read end for the parent, write end to pass to the child): a channel from the child
    that no file stands for. The write end is numbered >= FIRST_PASSED_FD, clear of the
    descriptors the wrapper shells use (0-3)."""
    r, w = os.pipe()
    try:
        high = fcntl.fcntl(w, fcntl.F_DUPFD_CLOEXEC, FIRST_PASSED_FD)
    finally:
        os.close(w)
    return r, high


def _checked(argv, ro_binds, scratch, env, limits, device, *, isolation, monitor, owned,
             readers, rw_binds=(), allow=frozenset()) -> SandboxResult:
    limits = limits or Limits()
    if any(fd < FIRST_PASSED_FD for fd in owned):
        raise ValueError(f"pass_fds must be >= {FIRST_PASSED_FD} (see child_pipe)")
    if not argv:
        raise ValueError("argv is empty")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', not {device!r}")
    probe = probe_layers()
    mode = probe.mode if isolation == "auto" else isolation
    if mode not in ("bwrap", "unshare", "none"):
        raise ValueError(f"unknown isolation {isolation!r}")
    if mode != "none" and not probe.layers.get(mode):
        raise SandboxError(f"isolation {mode!r} does not work here: {probe.details.get(mode)}")
    if scratch is None or not os.path.isdir(scratch):
        raise SandboxError(f"scratch dir {scratch} does not exist")
    scratch = os.path.abspath(scratch)
    binds = normalize_binds(ro_binds)
    writable = normalize_binds(rw_binds)
    warnings = []
    if mode != "bwrap":
        warnings += [f"{h} cannot be shown at {i} without bwrap; it is at {h}"
                     for h, i in binds + writable if h != i]
    job = _Job(list(argv), scratch, binds,
               _environment(env, scratch, private_tmp=mode == "bwrap"), limits, device,
               monitor, owned, readers, warnings, writable, allow)

    needed = [scratch] + [h for h, _ in binds + writable] + bwrap.python_roots(argv[0])
    if os.path.isabs(argv[0]):
        needed.append(argv[0])
    with accounts.acquire() as acct:
        fs = _mount_scratch(scratch, limits, probe, acct, warnings)
        try:
            if acct.dropped:
                os.chown(scratch, acct.uid, acct.gid)
                os.chmod(scratch, 0o700)
            # sealed grading folders open to this uid only, for this run only (grants.py)
            with grants.grant(acct.uid, needed) if acct.dropped else contextlib.nullcontext():
                if acct.dropped:
                    problem = check_reachable(needed, acct.uid, acct.gid)
                    if problem:
                        raise SandboxError(problem)
                return _run(job, probe, mode, acct, fs)
        finally:
            if fs:
                try:
                    scratchfs.unmount(scratch)
                except OSError as e:  # detached lazily; reported, not fatal
                    warnings.append(f"could not unmount the scratch filesystem: {e}")


def _mount_scratch(scratch: str, limits: Limits, probe: Probe, acct, warnings) -> bool:
    if not limits.scratch_mb or not probe.layers.get("run_fs"):
        return False
    owner = (acct.uid, acct.gid) if acct.dropped else (os.getuid(), os.getgid())
    try:
        scratchfs.mount(scratch, limits.scratch_mb * limits_mod.MIB,
                        limits.scratch_files or DEFAULT_SCRATCH_FILES, *owner)
    except OSError as e:
        warnings.append(f"no filesystem of the run's own on the scratch dir: {e}")
        return False
    return True


def _environment(env: dict[str, str] | None, scratch: str, private_tmp: bool) -> dict:
    out = dict(BASE_ENV, HOME=scratch)
    if not private_tmp:
        out["TMPDIR"] = scratch
    for k, v in (env or {}).items():
        if not isinstance(k, str) or not isinstance(v, str) or not k or "=" in k \
                or "\0" in k + v:
            raise ValueError(f"bad environment entry {k!r}={v!r}")
        out[k] = v
    return out


def _run(job: _Job, probe: Probe, mode: str, acct, fs: bool) -> SandboxResult:
    limits, owned = job.limits, job.owned
    layers, group, rl = _layers_and_limits(job, probe, mode, acct, fs)
    monitor = job.monitor
    if fs:  # a full scratch filesystem stops the run, as too much output does
        monitor = disk_guard(job.scratch, monitor)
    fds: list[int] = []
    proc = None
    try:
        cmd, popen_env, cwd, user, pass_fds = _command(job, probe, mode, acct, layers, fds)
        pass_fds = (*pass_fds, *owned)
        rl_in_child = not limits_mod.can_prlimit() or bool(user)
        # a pre-exec hook only where prlimit or setpriv are missing (macOS: no threads there)
        preexec = (lambda: limits_mod.apply_to_self(rl)) if rl_in_child else None
        gate_r, gate_w = pipe(fds)
        out_r, out_w = pipe(fds)
        err_r, err_w = pipe(fds)
        proc = subprocess.Popen(["/bin/sh", "-c", GATE, "judge-gate", *cmd],
                                stdin=gate_r, stdout=out_w, stderr=err_w, cwd=cwd,
                                env=popen_env, preexec_fn=preexec, pass_fds=pass_fds, **user,
                                **_session())
        for fd in (gate_r, out_w, err_w, *pass_fds):  # the child's copies are enough
            close(fd, fds)
            close(fd, owned)
        if group:
            group.add(proc.pid)
        if not rl_in_child:
            limits_mod.apply_to_pid(proc.pid, rl)
        os.write(gate_w, b"go\n")
        close(gate_w, fds)
        w, status, wall = _watch_run(proc, out_r, err_r, limits, group, monitor, job.readers)
    except BaseException as e:
        if proc is not None and proc.returncode is None:
            kill(proc.pid)
            os.waitpid(proc.pid, 0)
            proc.returncode = -9
        cleanup(group, acct, None)
        if isinstance(e, OSError):
            raise SandboxError(f"could not run the sandbox: {e}") from e
        raise
    finally:
        for fd in list(fds):  # the output pipes are closed only after the kill: no EPIPE
            close(fd, fds)
    return _result(job, mode, acct, fs, layers, group, proc.pid, w, status, wall)


def _layers_and_limits(job: _Job, probe: Probe, mode: str, acct, fs: bool):
    """(the layers this run is under, its cgroup or None, its rlimits)."""
    limits, device, warnings = job.limits, job.device, job.warnings
    layers = dict(probe.layers)
    hardened = acct.dropped and accounts.drop_prefix(acct, harden=True) is not None
    layers.update(mode_layers(mode, hardened, probe.bwrap_features), mode=mode,
                  device=device)
    wrapper = WRAPPER_PROCS[mode]
    group = cgroups.for_run(probe.hierarchy, limits.memory_bytes, limits.processes + wrapper,
                            limits.cpus, device == "cuda", warnings, layers)
    nproc = _nproc(acct, limits.processes + wrapper)
    if nproc is None:
        warnings.append("RLIMIT_NPROC not set: this uid is shared and its processes cannot "
                        "be counted here")
    rl = limits_mod.rlimits_for(limits, nproc=nproc, address_space=not layers["cgroup_memory"],
                                cuda=device == "cuda")
    layers["rlimit_nproc"] = nproc is not None
    layers["run_fs"] = fs
    layers["seccomp"] = bool(mode == "bwrap" and layers.get("seccomp"))
    layers["cache_probes"] = layers["seccomp"]  # the same filter refuses them
    # bwrap.build binds system_image's copy where one is made (a measurement may turn it off)
    layers["resident_view"] = mode == "bwrap" and system_image.in_use() is not None
    return layers, group, rl


def _watch_run(proc: subprocess.Popen, out_r: int, err_r: int, limits: Limits, group, monitor,
               readers: dict) -> tuple[Watch, int, float]:
    """The run watched from its "go" to its end, reaped by us: (what watch saw, the wait
    status, wall time)."""
    start = time.monotonic()
    meter = TreeMeter(proc.pid, group, start)
    w = watch(proc.pid, out_r, err_r, deadline=start + limits.wall_s,
              cap=limits.output_bytes, cpu_limit_s=limits.cpu_s, meter=meter,
              monitor=monitor, readers=readers)
    if w.status is None:  # still running: stopped by a limit
        w.usage = meter.sample()
        stop_tree(proc.pid, group)
        _, w.status, w.rusage = os.wait4(proc.pid, 0)
    drain(readers, w)
    proc.returncode = 0  # reaped by us: keep Popen from ever waiting on a recycled pid
    return w, w.status, time.monotonic() - start


def _result(job: _Job, mode: str, acct, fs: bool, layers: dict, group, pid: int, w: Watch,
            status: int, wall: float) -> SandboxResult:
    """What the run ended as, once what was left of it is killed."""
    warnings = job.warnings
    disk_full = fs and scratchfs.full(job.scratch)
    tree_cpu = group.cpu_s() if group else None
    throttled = group.throttled_s() if group else None
    oom, hit_limit, peak = group.memory_stats() if group and layers["cgroup_memory"] else \
        (0, 0, None)
    if cleanup(group, acct, pid if mode == "none" else None):
        warnings.append("some processes of the run could not be killed")
    res = SandboxResult(None, None, bytes(w.stdout), bytes(w.stderr), wall, tree_cpu,
                        mode=mode, uid=acct.uid if acct.dropped else None,
                        max_memory_bytes=peak, warnings=warnings,
                        wait_s=w.usage.wait_s if w.usage else None, throttled_s=throttled)
    # Without a cgroup: the CPU time of the tree as far as it was reaped (each wrapper waits
    # for its child, so the command's time is in it; orphans killed at the end are not), or
    # as last sampled, whichever saw more.
    if res.cpu_s is None:
        seen = [w.rusage.ru_utime + w.rusage.ru_stime] if w.rusage is not None else []
        seen += [w.usage.cpu_s] if w.usage and w.usage.cpu_s is not None else []
        res.cpu_s = max(seen, default=None)
    classify(res, status, w.stop, mode, job.limits, bool(oom), bool(hit_limit))
    res.disk_exceeded = res.disk_exceeded or bool(disk_full)
    res.layers = layers
    res.missing_layers = [k for k in SECURITY_LAYERS if not layers.get(k)]
    return res


def _command(job: _Job, probe: Probe, mode: str, acct, layers: dict, fds: list[int]):
    """(the command after the gate, Popen's env, cwd, uid-drop kwargs, fds to pass)."""
    argv, scratch, binds, env, limits = job.argv, job.scratch, job.binds, job.env, job.limits
    drop = accounts.drop_prefix(acct, harden=mode != "bwrap")  # None: setpriv is missing
    user = dict(user=acct.uid, group=acct.gid, extra_groups=[]) \
        if acct.dropped and drop is None else {}  # no setpriv: Popen drops the uid
    if mode == "bwrap":
        assert probe.bwrap_path is not None  # the probe picks bwrap only where bwrap ran
        filter_fd = None
        if layers["seccomp"]:
            filter_fd = seccomp.program_fd(job.allow)
            fds.append(filter_fd)
        cmd = (drop or []) + bwrap.build(
            probe.bwrap_path, pid1.wrap(argv), scratch=scratch, ro_binds=binds, env=env,
            tmp_bytes=limits.tmp_mb * limits_mod.MIB, device=job.device,
            feats=probe.bwrap_features, seccomp_fd=filter_fd,
            passwd=accounts.passwd_files() if acct.dropped else None, rw_binds=job.rw_binds)
        return cmd, {"PATH": "/usr/bin:/bin"}, "/", user, \
            (filter_fd,) if filter_fd is not None else ()
    if mode == "unshare":
        if drop is None:
            raise SandboxError("the unshare fallback needs setpriv (util-linux)")
        assert probe.unshare_tools is not None  # the probe picks unshare only where it ran
        return (unshare.build(probe.unshare_tools, pid1.wrap(argv), drop=drop), env, scratch,
                user, ())
    return (drop or []) + list(argv), env, scratch, user, ()




def _session() -> dict:
    """A new session only when we have a controlling terminal the child could push input
    into (TIOCSTI); otherwise a new process group, which keeps Popen on its fast vfork path.
    bwrap makes its own new session either way."""
    global _HAVE_TTY
    if _HAVE_TTY is None:
        try:
            os.close(os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY))
            _HAVE_TTY = True
        except OSError:
            _HAVE_TTY = False
    return {"start_new_session": True} if _HAVE_TTY else {"process_group": 0}


_HAVE_TTY: bool | None = None


def _nproc(acct, n: int) -> int | None:
    if acct.dropped:
        return n
    if not sys.platform.startswith("linux"):
        return None
    return n + len(accounts.pids_of_uid(acct.uid)) + 8  # our uid is shared: allow what exists
