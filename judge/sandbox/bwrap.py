"""The bubblewrap command line: a private, mostly read-only view of the filesystem.

Inside, the child sees only: the system's programs and libraries (/usr and the /bin, /lib*
links), a few files from /etc (the dynamic linker cache, a generated passwd), the Python that
runs it (venv and base install), the caller's read-only binds, the scratch dir (the only
writable host path), a size-capped tmpfs on /tmp and /dev/shm, a fresh /proc and a minimal
/dev. The root itself (bwrap's tmpfs holding the mount points) is remounted read-only.

The fresh /proc is the run's own pid namespace, but some of its files count the whole host:
two concurrent gradings signalled through /proc/sys/fs/inode-nr, meminfo, loadavg and stat at
10-25 bit/s (issue 20). Those files (HOST_COUNTERS) are covered by constant ones
(`proc_masks`), /proc/pressure and the CPUs' idle and frequency counters in /sys by an empty
tmpfs.
Every namespace is new (no network but a private loopback; its own pids, so killing bwrap
kills the whole tree), all capabilities are dropped, the environment is exactly the one
given. Host paths keep their absolute paths inside, so command lines need no translating.

bwrap must be started *after* the parent has dropped to the sandbox uid: run as root without
a user namespace it could remount a read-only bind writable.
"""

from __future__ import annotations

import glob
import os
import shutil
import site
import subprocess
import sys
from typing import Iterable, Sequence

from judge.sandbox import system_image

SYSTEM_DIRS = ("/usr",)
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
             "/etc/alternatives", "/etc/nsswitch.conf")
CUDA_SYS = ("/sys/devices", "/sys/bus/pci", "/sys/module/nvidia", "/sys/dev/char",
            "/run/nvidia-persistenced")


# /proc files that count the host, not the run: each is covered by a constant file
HOST_COUNTERS = {
    "loadavg": "0.00 0.00 0.00 1/1 1\n",
    "uptime": "0.00 0.00\n",
    "vmstat": "", "zoneinfo": "", "buddyinfo": "", "pagetypeinfo": "", "diskstats": "",
    "interrupts": "", "softirqs": "", "schedstat": "", "locks": "", "swaps": "",
    "slabinfo": "", "vmallocinfo": "", "key-users": "", "partitions": "", "timer_list": "",
    "sys/fs/inode-nr": "0 0\n", "sys/fs/inode-state": "0 0 0 0 0 0 0\n",
    "sys/fs/file-nr": "0\t0\t0\n", "sys/fs/dentry-state": "0 0 45 0 0 0\n",
    "sys/fs/aio-nr": "0\n", "sys/kernel/pty/nr": "0\n",
    "sys/kernel/random/entropy_avail": "256\n",
}
HOST_COUNTER_DIRS = ("/proc/pressure",)
MASK_GIB = 16  # what /proc/meminfo says the machine has (the cgroup's limit is the real one)


def _meminfo() -> str:
    kb = MASK_GIB << 20
    rows = {"MemTotal": kb, "MemFree": kb, "MemAvailable": kb, "Buffers": 0, "Cached": 0,
            "SwapCached": 0, "Active": 0, "Inactive": 0, "SwapTotal": 0, "SwapFree": 0,
            "Dirty": 0, "Shmem": 0}
    return "".join(f"{k + ':':<16}{v:>8} kB\n" for k, v in rows.items())


def _stat() -> str:
    zero = " 0" * 10
    cpus = "".join(f"cpu{i}{zero}\n" for i in range(os.cpu_count() or 1))
    btime = 0
    try:  # the boot time is the host's and never changes: nothing to signal with
        with open("/proc/stat") as f:
            btime = next((int(ln.split()[1]) for ln in f if ln.startswith("btime ")), 0)
    except (OSError, ValueError):
        pass
    return (f"cpu {zero}\n{cpus}intr 0\nctxt 0\nbtime {btime}\nprocesses 0\n"
            "procs_running 1\nprocs_blocked 0\nsoftirq 0\n")


_masks: dict[str, str] | None = None


def proc_masks() -> dict[str, str]:
    """{path inside: constant file on the host} for every host-wide counter file this host
    has; the files are written once per process, root's and world-readable."""
    global _masks
    if _masks is not None:
        return _masks
    import tempfile
    folder = tempfile.mkdtemp(prefix="judge-proc-")
    os.chmod(folder, 0o755)
    out = {}
    for name, text in {**HOST_COUNTERS, "meminfo": _meminfo(), "stat": _stat()}.items():
        inside = f"/proc/{name}"
        if not os.path.exists(inside):
            continue
        host = os.path.join(folder, name.replace("/", "_"))
        with open(host, "w") as f:
            f.write(text)
        os.chmod(host, 0o444)
        out[inside] = host
    _masks = out
    return out


def sys_masks() -> list[str]:
    """Folders of host-wide counters under the /sys the child sees: covered by a tmpfs."""
    cpu = "/sys/devices/system/cpu"
    return sorted(p for p in HOST_COUNTER_DIRS if os.path.isdir(p)) + sorted(
        glob.glob(f"{cpu}/cpu[0-9]*/cpuidle") + glob.glob(f"{cpu}/cpu[0-9]*/cpufreq")
        + glob.glob(f"{cpu}/cpufreq") + glob.glob(f"{cpu}/cpuidle"))


def find() -> str | None:
    return shutil.which("bwrap")


def features(path: str) -> dict[str, bool]:
    """Which optional flags this bwrap understands (--size needs 0.5, --disable-userns 0.8)."""
    try:
        text = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=5,
                              stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.SubprocessError):
        text = ""
    return {"size": "--size" in text, "disable_userns": "--disable-userns" in text}


def _depth(path: str) -> int:
    return len([p for p in path.split("/") if p])


def python_roots(argv0: str | None = None) -> list[str]:
    """The install trees the interpreter needs: this process's venv and base Python, and the
    venv of ``argv0`` when it is one. Trees under /usr are already bound."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    if argv0 and os.path.isabs(argv0):
        venv = os.path.dirname(os.path.dirname(argv0))
        if os.path.exists(os.path.join(venv, "pyvenv.cfg")):
            roots.add(venv)
    roots |= _site_dirs_outside(roots)
    return sorted(r for r in roots if r and r != "/" and not _under(r, "/usr"))


def _site_dirs_outside(roots: set[str]) -> set[str]:
    """Site-packages dirs on sys.path that lie outside every Python install: a venv made by
    ``scripts/setup.sh --offline`` from a Python that is itself a venv reaches the host's torch
    through a .pth line naming such a dir, and the child reads the same .pth. Only dirs named
    like site dirs, so the repository (on sys.path too) stays out of the sandbox; the user
    site stays out because the child runs with -s."""
    try:
        user = site.getusersitepackages()
    except Exception:
        user = None
    out = set()
    for p in sys.path:
        if (p and os.path.isabs(p) and os.path.basename(p) in ("site-packages", "dist-packages")
                and p != user and os.path.isdir(p)
                and not any(r and _under(p, r) for r in roots)):
            out.add(p)
    return out


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def host_files(argv0: str | None, passwd: tuple[str, str] | None) -> list[tuple[str, ...]]:
    """The mounts of the host's files a run sees: the system, the Python install, /etc, the
    generated passwd and /proc masks. Where system_image can make its in-memory image of
    them, that image (a page a run reads there is never cold: no timing says what an earlier
    run read); elsewhere the host's own folders."""
    generated = dict(proc_masks())
    if passwd:
        generated.update({"/etc/passwd": passwd[0], "/etc/group": passwd[1]})
    image = system_image.current(generated)
    mounts: list[tuple[str, ...]] = list(image.mounts()) if image else []
    for d in SYSTEM_LINKS:
        if os.path.islink(d):
            mounts.append(("--symlink", os.readlink(d), d))
        elif os.path.isdir(d) and not image:
            mounts.append(("--ro-bind", d, d))
    if not image:
        mounts += [("--ro-bind", d, d) for d in SYSTEM_DIRS]
        mounts += [("--ro-bind-try", f, f) for f in ETC_FILES if os.path.lexists(f)]
    for root in python_roots(argv0):
        if not (image and image.holds(root)):  # another interpreter's venv: the host's
            mounts.append(("--ro-bind", root, root))
    for inside, host in generated.items():
        if not (image and image.holds(inside)):
            mounts.append(("--ro-bind", host, inside))
    return mounts


def build(bwrap: str, argv: Sequence[str], *, scratch: str,
          ro_binds: Iterable[tuple[str, str]], env: dict[str, str], tmp_bytes: int,
          passwd: tuple[str, str] | None, device: str = "cpu",
          feats: dict[str, bool] | None = None, seccomp_fd: int | None = None,
          rw_binds: Iterable[tuple[str, str]] = ()) -> list[str]:
    feats = feats or {}
    # (option, *args, dest) - sorted by dest depth below
    mounts = host_files(argv[0] if argv else None, passwd)
    mounts.append(("--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"))

    size = ("--size", str(tmp_bytes)) if feats.get("size") else ()
    mounts.append(("--proc", "/proc"))
    for inside in sys_masks():
        mounts.append(("--tmpfs", inside))
    mounts.append(("--dev", "/dev"))
    mounts.append((*size, "--tmpfs", "/tmp"))
    mounts.append((*size, "--tmpfs", "/dev/shm"))

    if device == "cuda":
        for node in sorted(glob.glob("/dev/nvidia*")):
            mounts.append(("--dev-bind", node, node))
        for p in CUDA_SYS:
            if os.path.exists(p):
                mounts.append(("--ro-bind-try", p, p))

    mounts.append(("--bind", scratch, scratch))
    for host, inside in ro_binds:
        mounts.append(("--ro-bind", host, inside))
    for host, inside in rw_binds:  # a folder two sandboxes of one grading share (proxied.py)
        mounts.append(("--bind", host, inside))

    cmd = [bwrap, "--unshare-all"]
    if feats.get("disable_userns"):
        cmd += ["--unshare-user", "--disable-userns"]
    # --as-pid-1: argv starts with our own pid-1 shell (pid1.py), which bwrap then reaps
    cmd += ["--as-pid-1", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--hostname", "sandbox"]
    for m in sorted(mounts, key=lambda m: _depth(m[-1])):  # parents before children
        cmd += m
    cmd += ["--remount-ro", "/"]  # bwrap's root is a tmpfs: nothing but the mounts is writable
    cmd += ["--clearenv"]
    for k, v in env.items():
        cmd += ["--setenv", k, v]
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    cmd += ["--chdir", scratch, "--", *argv]
    return cmd
