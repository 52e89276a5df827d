"""Which isolation layers work on this machine, found once per process by trying them.

``probe_layers()`` runs a couple of tiny commands (``true`` and ``python -S``) through each
mechanism, well under a second in all, and caches the answer. Every layer gets a value
(True/False, or a string naming the variant) and one sentence saying what it does here or
why it is missing, for ``judge.py doctor`` and for each grading report.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field

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
from judge.sandbox.paths import check_reachable

# Layers whose absence weakens isolation; these are listed in ``missing``.
SECURITY_LAYERS = ("python_runs", "rlimits", "uid_drop", "private_fs", "netns", "pidns",
                   "cgroup", "cgroup_cpu", "run_fs", "private_views", "caps_dropped",
                   "no_new_privs", "scrubbed_env", "seccomp", "proc_view", "cache_probes",
                   "resident_view")


@dataclass
class Probe:
    layers: dict[str, bool | str | None]
    details: dict[str, str]
    mode: str                          # "bwrap" | "unshare" | "none": how children are wrapped
    hierarchy: cgroups.Hierarchy | None = None
    bwrap_path: str | None = None
    bwrap_features: dict[str, bool] = field(default_factory=dict)
    unshare_tools: tuple[str, str] | None = None

    @property
    def missing(self) -> list[str]:
        return [k for k in SECURITY_LAYERS if not self.layers.get(k)]

    def __getitem__(self, name: str) -> dict:
        return {"ok": self.layers[name], "why": self.details.get(name, "")}

    def __iter__(self):
        return iter(self.layers)

    def items(self):
        """(name, {"ok": value, "why": sentence}) for every layer."""
        return [(k, self[k]) for k in self.layers]

    def to_dict(self) -> dict:
        return {"mode": self.mode, "layers": dict(self.items()), "missing": self.missing}

    def describe(self) -> str:
        lines = [f"sandbox mode: {self.mode}"]
        for k, v in self.layers.items():
            mark = "ok " if v else "-- "
            lines.append(f"  {mark}{k} = {v}: {self.details.get(k, '')}")
        return "\n".join(lines)


_lock = threading.Lock()
_cached: Probe | None = None


def probe_layers(refresh: bool = False) -> Probe:
    """What works here (cached per process; ``refresh=True`` probes again)."""
    global _cached
    with _lock:
        if _cached is None or refresh:
            _cached = _probe()
        return _cached


def _try(cmd: list[str], **kw) -> tuple[bool, str]:
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=10,
                           **kw)
    except (OSError, subprocess.SubprocessError) as e:
        return False, str(e)
    err = p.stderr.decode(errors="replace").strip().splitlines()
    return p.returncode == 0, (err[-1] if err else f"exit status {p.returncode}")


def _probe() -> Probe:
    L: dict[str, bool | str | None] = {}
    D: dict[str, str] = {}
    linux = sys.platform.startswith("linux")
    root = accounts.is_root()
    _always_layers(L, D, linux)
    h = _cgroup_layers(L, D, linux, root)
    _run_fs_layer(L, D, linux, root)
    _private_views_layer(L, D, root)
    with accounts.acquire() as acct, tempfile.TemporaryDirectory(prefix="judge-probe-") as tmp:
        os.chmod(tmp, 0o755)
        if acct.dropped:
            os.chown(tmp, acct.uid, acct.gid)
        trial = _Trial(acct, tmp)
        mode, bw_path, feats = _bwrap_layers(L, D, linux, trial)
        mode, tools = _unshare_layer(L, D, linux, trial, mode)
        _python_runs_layer(L, D, trial, mode)
    _mode_dependent_layers(L, D, mode, root, feats)
    L["resident_view"], D["resident_view"] = _resident(mode)
    return Probe(L, D, mode, h, bw_path, feats, tools)


def _always_layers(L: dict, D: dict, linux: bool) -> None:
    L["rlimits"] = True
    D["rlimits"] = ("CPU seconds, file size, open files and no core dumps are capped with "
                    "rlimits" + (", set by the parent with prlimit before the child runs"
                                 if linux else ", set in the child before exec"))
    L["scrubbed_env"] = True
    D["scrubbed_env"] = "the child gets only the environment the caller passes plus PATH, " \
                        "HOME, LANG, OMP_NUM_THREADS=1 and MALLOC_ARENA_MAX=2"


def _cgroup_layers(L: dict, D: dict, linux: bool, root: bool) -> cgroups.Hierarchy | None:
    h, why = cgroups.detect() if linux and root else (None, (
        "not Linux: no control groups" if not linux else
        "not root: no cgroup of our own to create per-run groups in"))
    if h:
        cgroups.remove_stale(h)
    L["cgroup"] = h.version if h else None
    L["cgroup_memory"] = bool(h and h.has_memory)
    L["cgroup_pids"] = bool(h and h.has_pids)
    L["cgroup_cpu"] = bool(h and h.has_cpu)
    D["cgroup"] = why
    D["cgroup_memory"] = ("memory is capped by the run's cgroup (an OOM kill is reported as "
                          "memory_exceeded)" if L["cgroup_memory"] else
                          "memory is capped with RLIMIT_AS instead (virtual memory; torch "
                          "needs >= 2 GiB of it to import)")
    D["cgroup_pids"] = ("the number of processes is capped by the run's pids cgroup"
                        if L["cgroup_pids"] else "processes are capped with RLIMIT_NPROC only")
    D["cgroup_cpu"] = ("a CPU quota per run (one core's worth by default) and a lower weight "
                       "than the host's own work: forked spinners cannot starve the host"
                       if L["cgroup_cpu"] else "no cpu controller for the run's cgroup: a run "
                       "may keep every core busy while it is within its CPU time limits")
    return h


def _run_fs_layer(L: dict, D: dict, linux: bool, root: bool) -> None:
    if linux and root:
        L["run_fs"], D["run_fs"] = scratchfs.probe()
    else:
        L["run_fs"] = False
        D["run_fs"] = ("not root: no filesystem of the run's own; the scratch dir is a host "
                       "folder (file size capped by RLIMIT_FSIZE only)" if linux else
                       "not Linux: the scratch dir is a host folder")


def _private_views_layer(L: dict, D: dict, root: bool) -> None:
    try:
        L["private_views"] = grants.private(tempfile.gettempdir())
    except OSError:
        L["private_views"] = False
    D["private_views"] = (
        "grading folders are root-only (0700); a run's uid is let in to what it mounts, for "
        "that run (POSIX ACLs), so a run cannot read another grading's code or hidden tests"
        if L["private_views"] and root else "grading folders are private to this user (0700)"
        if L["private_views"] else "no POSIX ACLs in the temporary folder: grading folders "
        "stay world-readable, so without a private filesystem view one run can read another's "
        "code and hidden tests")


class _Trial:
    """The probe's sandbox account and folder, and how a trial command drops to that account
    (a uid-switching prefix where there is one, else subprocess's own user/group)."""

    def __init__(self, acct: accounts.Account, tmp: str):
        self.acct, self.tmp = acct, tmp
        drop = accounts.drop_prefix(acct, harden=False)
        self.user: dict = {}
        if drop is None:
            drop, self.user = [], dict(user=acct.uid, group=acct.gid, extra_groups=[])
        self.drop: list[str] = drop
        self.py = [sys.executable, "-S", "-c", "pass"]


def _bwrap_layers(L: dict, D: dict, linux: bool,
                  t: _Trial) -> tuple[str, str | None, dict[str, bool]]:
    """bwrap (and, where the kernel has it, seccomp through it): (mode, bwrap's path, its
    features)."""
    bw_path = bwrap.find() if linux else None
    if not bw_path:
        L["bwrap"] = False
        D["bwrap"] = ("bubblewrap is not installed (apt-get install bubblewrap)" if linux
                      else "bubblewrap exists only on Linux")
        return "none", None, {}
    feats = bwrap.features(bw_path)
    ok = False
    if seccomp.supported():
        ok, msg = _try_bwrap(bw_path, feats, t, with_seccomp=True)
        L["seccomp"] = ok
        D["seccomp"] = ("a seccomp filter refuses syscalls a submission never needs "
                        "(ptrace, mount, bpf, perf_event_open, io_uring, keyrings...)"
                        if ok else f"bwrap could not load the seccomp filter: {msg}")
    if not ok:
        ok, msg = _try_bwrap(bw_path, feats, t, with_seccomp=False)
    L["bwrap"] = ok
    D["bwrap"] = (f"{bw_path} works: private read-only filesystem view, new "
                  "namespaces, all capabilities dropped" if ok else
                  f"{bw_path} is installed but fails here: {msg}")
    return ("bwrap" if ok else "none"), bw_path, feats


def _try_bwrap(bw_path: str, feats: dict[str, bool], t: _Trial,
               with_seccomp: bool) -> tuple[bool, str]:
    fd = seccomp.program_fd() if with_seccomp else None
    try:
        cmd = bwrap.build(bw_path, pid1.wrap(t.py), scratch=t.tmp, ro_binds=[],
                          tmp_bytes=1 << 20,
                          env={"PATH": "/usr/bin"}, device="cpu", feats=feats,
                          passwd=accounts.passwd_files() if t.acct.dropped else None,
                          seccomp_fd=fd)
        return _try(t.drop + cmd, env={"PATH": "/usr/bin:/bin"}, cwd="/",
                    pass_fds=(fd,) if fd is not None else (), **t.user)
    finally:
        if fd is not None:
            os.close(fd)


def _unshare_layer(L: dict, D: dict, linux: bool, t: _Trial,
                   mode: str) -> tuple[str, tuple[str, str] | None]:
    """util-linux's unshare + setpriv, the fallback wrapper: (mode, the tools' paths)."""
    tools = unshare.find() if linux else None
    if tools:
        cmd = unshare.build(tools, pid1.wrap(t.py),
                            drop=accounts.drop_prefix(t.acct, harden=True) or [])
        ok, msg = _try(cmd, env={"PATH": "/usr/bin:/bin"}, cwd=t.tmp)
        L["unshare"] = ok
        D["unshare"] = ("util-linux unshare + setpriv work (the fallback when bwrap "
                        "does not)" if ok else f"unshare fails here: {msg}")
        if ok and mode == "none":
            mode = "unshare"
    else:
        L["unshare"] = False
        D["unshare"] = "util-linux unshare/setpriv not found" if linux else "Linux only"
    return mode, tools


def _python_runs_layer(L: dict, D: dict, t: _Trial, mode: str) -> None:
    problem = None
    if t.acct.dropped:
        problem = check_reachable(bwrap.python_roots() + [sys.executable], t.acct.uid,
                                  t.acct.gid)
        if not problem and mode == "none":
            ok, msg = _try(t.drop + t.py, cwd=t.tmp, env={}, **t.user)
            problem = None if ok else f"{sys.executable} fails as uid {t.acct.uid}: {msg}"
    L["python_runs"] = not problem
    D["python_runs"] = problem or f"{sys.executable} runs as the sandbox's uid"


def _mode_dependent_layers(L: dict, D: dict, mode: str, root: bool,
                           feats: dict[str, bool]) -> None:
    """The layers that follow from the chosen wrapper and from being root: the uid drop, the
    namespaces, seccomp (only through bwrap) and what seccomp hides."""
    L["uid_drop"] = root
    D["uid_drop"] = (f"the child runs as a dedicated uid {accounts.BASE_UID}+slot "
                     "(RLIMIT_NPROC counts per uid; leftovers are killed by uid)" if root else
                     "not root: the child runs as our own uid, and RLIMIT_NPROC is set "
                     "above the number of processes this uid already has")
    L.update(mode_layers(mode, root and accounts.drop_prefix(
        accounts.Account(0, 0, 0, True), harden=True) is not None, feats))
    D.update(_mode_details(mode, L, root))
    if not (L["bwrap"] and L.get("seccomp")):
        L["seccomp"] = False
        # bwrap works and seccomp is supported: the probe above tried the filter and said why
        D["seccomp"] = D["seccomp"] if L["bwrap"] and seccomp.supported() else (
            "no seccomp filter: it is loaded by bwrap, and has a syscall table for x86-64 only")
    L["cache_probes"] = L["seccomp"]
    D["cache_probes"] = (
        "the host's page cache cannot be asked or emptied: " + ", ".join(
            f"{k} -> {v}" for k, v in seccomp.PROBES.items()) + " (only timing a read is left)"
        if L["cache_probes"] else "without the seccomp filter a run can ask which pages of "
        "a shared file are cached (preadv2 RWF_NOWAIT, mincore) and leave a pattern for the "
        "next run")


def _resident(mode: str) -> tuple[bool, str]:
    """Whether a run's view of the host's files is system_image's copy in memory (the probe's
    bwrap run above made it, or found it made)."""
    image = system_image.in_use()
    if mode == "bwrap" and image:
        return True, (f"a run sees an in-memory copy ({image.bytes >> 20} MiB, never swapped) "
                      "of the host files grading needs, not the host's /usr and Python install: "
                      "no page it can read is ever cold, so timing a read tells it nothing "
                      "an earlier run did")
    why = system_image.why_not() if mode == "bwrap" else "no private filesystem view"
    return False, (f"{why}: a run reads the host's own files, and timing a read of a page "
                   "shows whether an earlier run read it (the page cache)")


def mode_layers(mode: str, root: bool, feats: dict[str, bool]) -> dict[str, bool | str]:
    """The layers that depend on how the child is wrapped ("bwrap", "unshare" or "none").

    ``root``: the chain starts as root and drops through setpriv (which hardens it)."""
    iso = mode if mode in ("bwrap", "unshare") else False
    return {
        "private_fs": mode == "bwrap",
        "netns": iso,
        "pidns": iso,
        # as root, setpriv empties the bounding set and sets no_new_privs in every mode; a
        # non-root parent has no capabilities to pass on
        "caps_dropped": True,
        "no_new_privs": bool(iso) or root,
        "userns_disabled": mode == "bwrap" and feats.get("disable_userns", False),
        "proc_view": mode == "bwrap",
    }


def _mode_details(mode: str, L: dict, root: bool) -> dict[str, str]:
    iso = mode in ("bwrap", "unshare")
    return {
        "private_fs": ("only /usr, the Python install, the given read-only binds and the "
                       "scratch dir are visible, and only the scratch dir (plus a private /tmp) "
                       "is writable" if mode == "bwrap" else
                       "no private filesystem view: the child can read whatever its uid may"),
        "netns": ("a new network namespace: no network at all, not even the host's loopback"
                  if iso else "no network namespace: the child can use the network"),
        "pidns": ("a new pid namespace: when its first process ends, the kernel kills the "
                  "rest" if iso else "no pid namespace: leftovers are killed by uid and cgroup "
                  "instead" if root else "no pid namespace and no uid of our own: leftovers "
                  "are killed by process group only, so a process that starts its own "
                  "session (setsid) can outlive the run"),
        "caps_dropped": "the child holds no capabilities",
        "proc_view": ("/proc is the run's own; its host-wide counters (meminfo, loadavg, stat, "
                      "vmstat, diskstats, pressure, sys/fs/inode-nr, file-nr, ... and the CPUs' "
                      "idle counters in /sys) read as constants, so concurrent runs cannot "
                      "signal through them" if mode == "bwrap" else "no /proc of the run's own: "
                      "host-wide counters (inode-nr, meminfo, loadavg) are a channel between "
                      "concurrent runs"),
        "no_new_privs": ("no_new_privs is set: setuid programs cannot raise privileges"
                         if L["no_new_privs"] else "no_new_privs is not set"),
        "userns_disabled": ("the child cannot create further user namespaces"
                            if L["userns_disabled"] else "nested user namespaces are allowed"),
    }
