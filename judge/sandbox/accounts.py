"""The unprivileged accounts a root parent drops the submission to.

RLIMIT_NPROC counts processes per real uid and is ignored for root, so each concurrently
running sandbox gets its own uid: slot ``n`` is uid/gid ``BASE_UID + n``. No passwd entry
is created on the host (nothing to install or clean up); the sandbox sees a generated
``/etc/passwd`` that names it. A slot is held with ``flock`` on a file under the state
directory, so several judge processes on one machine never share a uid.

Because a slot's uid belongs to nobody else, "kill every process of this uid" is a safe and
complete way to make sure nothing from a run survives it (see :func:`kill_uid`).
"""

from __future__ import annotations

import errno
import itertools
import os
import shutil
import signal
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from judge.config import settings

BASE_UID = settings().sandbox_base_uid
SLOTS = 64
NAME = "judge-sandbox"
_rotation = itertools.count()


@dataclass(frozen=True)
class Account:
    uid: int
    gid: int
    slot: int | None        # None: no uid of our own (not root); we run as ourselves
    dropped: bool           # True when the child runs as this uid instead of ours


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def state_dir() -> str:
    """A directory only root can write: slot locks and the generated passwd/group files."""
    base = "/run" if os.path.isdir("/run") and os.access("/run", os.W_OK) else "/var/tmp"
    path = os.path.join(base, NAME)
    os.makedirs(path, mode=0o755, exist_ok=True)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        raise RuntimeError(f"{path} must be a directory owned by root and not group/world "
                           "writable")
    os.chmod(path, 0o755)
    return path


_passwd_cache: tuple[str, str] | None = None


def passwd_files() -> tuple[str, str]:
    """Paths of a passwd and a group file naming root, nobody and the sandbox slots."""
    global _passwd_cache
    if _passwd_cache:
        return _passwd_cache
    d = state_dir()
    users = ["root:x:0:0:root:/root:/usr/sbin/nologin",
             "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin"]
    groups = ["root:x:0:", "nogroup:x:65534:"]
    for n in range(SLOTS):
        uid = BASE_UID + n
        users.append(f"{NAME}-{n}:x:{uid}:{uid}:judge sandbox:/tmp:/usr/sbin/nologin")
        groups.append(f"{NAME}-{n}:x:{uid}:")
    for name, lines in (("passwd", users), ("group", groups)):
        path, text = os.path.join(d, name), "\n".join(lines) + "\n"
        try:
            with open(path) as f:
                if f.read() == text:
                    continue
        except OSError:
            pass
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    _passwd_cache = os.path.join(d, "passwd"), os.path.join(d, "group")
    return _passwd_cache


@contextmanager
def acquire(wait_s: float = 30.0) -> Iterator[Account]:
    """Hold an account for one run. As root: a free slot uid. Otherwise: our own uid."""
    if not is_root():
        uid = os.getuid() if hasattr(os, "getuid") else -1
        gid = os.getgid() if hasattr(os, "getgid") else -1
        yield Account(uid, gid, None, False)
        return
    import fcntl  # POSIX only; root on Windows does not happen

    d = os.path.join(state_dir(), "slots")
    os.makedirs(d, mode=0o700, exist_ok=True)
    deadline = time.monotonic() + wait_s
    # Round-robin over the slots: a uid is reused as late as possible, so whatever a run
    # left behind (a dying process, a zombie not yet reaped) is long gone by then.
    start = (os.getpid() * 7 + next(_rotation)) % SLOTS
    while True:
        for i in range(SLOTS):
            slot = (start + i) % SLOTS
            fd = os.open(os.path.join(d, f"{slot}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                os.close(fd)
                if e.errno in (errno.EAGAIN, errno.EACCES):
                    continue
                raise
            try:
                uid = BASE_UID + slot
                kill_uid(uid)  # a previous holder that crashed may have left processes
                yield Account(uid, uid, slot, True)
            finally:
                os.close(fd)  # releases the flock
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"all {SLOTS} sandbox slots are busy")
        time.sleep(0.05)


_setpriv: str | None = None


def drop_prefix(acct: Account, *, harden: bool) -> list[str] | None:
    """The ``setpriv`` words that make a root-started chain continue as ``acct``.

    The parent sets rlimits with prlimit on the gated child while both are root: that needs
    no CAP_SYS_RESOURCE (some containers run root without it), which prlimit on a process of
    another uid would. ``harden`` also empties the capability bounding set and sets
    no_new_privs (bwrap does both itself). None when setpriv is missing.
    """
    global _setpriv
    if not acct.dropped:
        return []
    if _setpriv is None:
        _setpriv = shutil.which("setpriv") or ""
    setpriv = _setpriv
    if not setpriv:
        return None
    cmd = [setpriv, f"--reuid={acct.uid}", f"--regid={acct.gid}", "--clear-groups"]
    if harden:
        cmd += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    return cmd + ["--"]


def pids_of_uid(uid: int) -> list[int]:
    """Live (not zombie) processes whose /proc entry belongs to ``uid``; empty off Linux.

    Zombies are skipped: they cannot be killed, only reaped by their parent.
    """
    out: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid != uid:
                    continue
                with open(f"/proc/{name}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state not in (b"Z", b"X"):
                out.append(int(name))
    return out


def kill_uid(uid: int, rounds: int = 50) -> bool:
    """SIGKILL every process of ``uid``; True when none is left. Root only, dedicated uids only.

    A process that keeps forking can outrun a list-then-kill loop, so after a few rounds a
    helper that runs as ``uid`` calls ``kill(-1, SIGKILL)``, which the kernel applies to every
    process of that uid in one pass.
    """
    if uid == 0 or uid < BASE_UID or not os.path.isdir("/proc"):
        return True
    for r in range(rounds):
        pids = pids_of_uid(uid)
        if not pids:
            return True
        if r >= 3:
            _kill_all_as(uid)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.002 * (r + 1))
    return not pids_of_uid(uid)


def _kill_all_as(uid: int) -> None:
    import subprocess

    try:
        subprocess.run(["kill", "-s", "KILL", "--", "-1"], user=uid, group=uid, extra_groups=[],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=5, env={"PATH": "/usr/bin:/bin"})
    except (OSError, subprocess.SubprocessError):
        pass
