"""A filesystem of the run's own on its scratch dir: a tmpfs capped in bytes and in files.

Why: a scratch dir on the host's disk lets a run write gigabytes and hundreds of thousands of
files in seconds (the host's problem, not a verdict), and lets two runs that share the disk
signal to each other through its free-space and free-inode counts (statvfs). A tmpfs mounted
on the scratch dir for the length of one run has its own counts, its own caps (`size=`,
`nr_inodes=`), and vanishes with everything in it when the run ends. Its pages are charged to
the memory cgroup of the process that writes them, so they count against the run's memory too.

Mounting needs root (CAP_SYS_ADMIN in the host's mount namespace); where it fails the scratch
dir stays a plain folder and the layer is reported missing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

MS_NOSUID, MS_NODEV = 2, 4
MNT_DETACH = 2
SOURCE = "judge-scratch"  # the device name /proc/mounts shows: how leftovers are recognized

_libc = None


def _c():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def _check(rc: int, what: str, path: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}", path)


def mount(path: str, size_bytes: int, files: int, uid: int, gid: int) -> None:
    """A tmpfs on `path` holding at most `size_bytes` and `files` files and folders, owned by
    uid:gid with mode 0700. Raises OSError where mounting is not allowed."""
    # nr_inodes counts the root folder too
    opts = f"size={int(size_bytes)},nr_inodes={int(files) + 1},mode=0700,uid={uid},gid={gid}"
    _check(_c().mount(SOURCE.encode(), os.fsencode(path), b"tmpfs", MS_NOSUID | MS_NODEV,
                      opts.encode()), "mount tmpfs", path)


def unmount(path: str) -> None:
    """Detach the tmpfs (lazily: a process the kill missed cannot keep it busy)."""
    _check(_c().umount2(os.fsencode(path), MNT_DETACH), "umount", path)


def full(path: str) -> bool:
    """No byte or no file left: a write has failed, or the next one will."""
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bfree == 0 or st.f_ffree == 0


def mounted_under(folder: str) -> list[str]:
    """Our tmpfs mounts at or below `folder`, deepest first (for cleaning up after a crash)."""
    prefix = folder.rstrip("/") + "/"
    out = []
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[0] == SOURCE and parts[2] == "tmpfs":
                    target = parts[1].replace("\\040", " ")
                    if target.startswith(prefix) or target == folder:
                        out.append(target)
    except OSError:
        return []
    return sorted(out, key=len, reverse=True)


def probe() -> tuple[bool, str]:
    """(works, sentence) by mounting a tiny one in a temporary folder."""
    import tempfile

    d = tempfile.mkdtemp(prefix="judge-probe-fs-")
    try:
        mount(d, 1 << 20, 8, os.getuid(), os.getgid())
        try:
            ok = os.statvfs(d).f_files == 9
        finally:
            unmount(d)
    except OSError as e:
        return False, (f"no filesystem of the run's own ({e.strerror}): the scratch dir is a "
                       "host folder, so a run can fill the host's disk up to its file size "
                       "limit per file, and runs can read each other's free-space counts")
    finally:
        os.rmdir(d)
    if not ok:
        return False, "tmpfs ignored nr_inodes here: the scratch dir is a host folder"
    return True, ("each run's scratch dir is a tmpfs of its own, capped in bytes and in files "
                  "(size=, nr_inodes=), gone when the run ends")
