"""Read access to a grading's files for the uid of the run that needs them, and nobody else.

Without a private filesystem view (the unshare fallback) a sandboxed child sees the host's files
with its uid's permissions. Grading folders used to be world-readable (the sandbox runs as
another uid and must read them), so a submission graded at the same time read another's code
and its hidden tests. Now a folder handed to `seal` is made root-only (every folder in it 0700;
files keep 0644, guarded by their folders), and `run_sandboxed` lets the run's uid in for the
length of the run with POSIX ACL entries (`grant`): --x on the sealed folders above each path it
binds, r-x on the folders of that path. Another run's uid gets nothing.

Where the filesystem has no POSIX ACLs, sealed folders stay world-readable as before, and the
layer `private_views` is reported missing. Without root there is no uid to let in: the child
runs as the owner, and 0700 keeps everyone else out.
"""

from __future__ import annotations

import errno
import os
import struct
import tempfile
import threading
from contextlib import contextmanager

XATTR = "system.posix_acl_access"
USER_OBJ, USER, GROUP_OBJ, MASK, OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
NO_ID = 0xFFFFFFFF
SEALED_MODE = 0o700
OPEN_MODE = 0o755
R, X = 4, 1

_lock = threading.Lock()
_roots: set[str] = set()
_table: dict[str, dict[int, int]] = {}   # folder -> {uid: perm bits} currently granted
_acl_ok: dict[int, bool] = {}           # st_dev -> whether POSIX ACLs work there


def _encode(entries: dict[int, int]) -> bytes:
    """The kernel's ACL xattr for a folder of mode 0700 plus named users."""
    mask = 0
    for perm in entries.values():
        mask |= perm
    items = [(USER_OBJ, 7, NO_ID)] + [(USER, p, uid) for uid, p in sorted(entries.items())]
    items += [(GROUP_OBJ, 0, NO_ID), (MASK, mask, NO_ID), (OTHER, 0, NO_ID)]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in items)


def acls_work(path: str) -> bool:
    """Whether ACL entries can be set on the filesystem of `path` (tried once per filesystem)."""
    dev = os.stat(path).st_dev
    if dev not in _acl_ok:
        probe = tempfile.mkdtemp(prefix=".acl-probe-", dir=path)
        try:
            os.setxattr(probe, XATTR, _encode({os.getuid() + 1: X}))
            _acl_ok[dev] = True
        except OSError:
            _acl_ok[dev] = False
        finally:
            os.rmdir(probe)
    return _acl_ok[dev]


def private(path: str) -> bool:
    """Whether a folder sealed at `path` is kept from other users (see the module doc)."""
    return not _root() or acls_work(path)


def seal(root: str, *folders: str) -> bool:
    """Make `root` (and `folders` in it: new ones, as they are added) private to root, run
    uids let in by `grant`. False where that cannot work here: they are left world-readable."""
    root = os.path.abspath(root)
    keep = private(root)
    with _lock:
        if keep:
            _roots.add(root)
        for top in folders or (root,):
            for d, _, _ in os.walk(top):
                os.chmod(d, SEALED_MODE if keep else OPEN_MODE)
    return keep


def forget(root: str) -> None:
    """`root` is being deleted: drop what is known about it."""
    root = os.path.abspath(root)
    with _lock:
        _roots.discard(root)
        for d in [d for d in _table if _under(d, root)]:
            del _table[d]


@contextmanager
def grant(uid: int, paths):
    """Let `uid` read `paths` (and pass through the sealed folders above them) meanwhile."""
    wanted = _wanted(paths)
    with _lock:
        for d, perm in wanted.items():
            _table.setdefault(d, {})[uid] = _table.get(d, {}).get(uid, 0) | perm
            _write(d)
    try:
        yield
    finally:
        with _lock:
            for d in wanted:
                entries = _table.get(d)
                if entries is not None:
                    entries.pop(uid, None)
                    _write(d)


def _wanted(paths) -> dict[str, int]:
    """{folder: perm bits} for `paths`: --x on each sealed folder passed through to reach one,
    r-x on every folder inside one that is a folder."""
    out: dict[str, int] = {}
    with _lock:
        roots = sorted(_roots)
    for path in paths:
        path = os.path.abspath(path)
        root = next((r for r in roots if _under(path, r)), None)
        if root is None:
            continue
        rel = os.path.relpath(path, root)
        d = root
        for part in [] if rel == "." else rel.split(os.sep):
            out[d] = out.get(d, 0) | X
            d = os.path.join(d, part)
        if os.path.isdir(path):
            for sub, _, _ in os.walk(path):
                if os.stat(sub).st_uid == 0:  # not the run's own scratch dir
                    out[sub] = out.get(sub, 0) | R | X
    return out


def granted(path: str, uid: int) -> int | None:
    """The permission bits an ACL entry gives `uid` on `path` (masked), None without one."""
    try:
        raw = os.getxattr(path, XATTR)
    except OSError:
        return None
    perm, mask = None, 7
    for off in range(4, len(raw) - 7, 8):
        tag, p, ident = struct.unpack_from("<HHI", raw, off)
        if tag == USER and ident == uid:
            perm = p
        elif tag == MASK:
            mask = p
    return None if perm is None else perm & mask


def _write(d: str) -> None:
    entries = _table.get(d) or {}
    try:
        if entries:
            os.setxattr(d, XATTR, _encode(entries))
        else:
            _table.pop(d, None)
            try:
                os.removexattr(d, XATTR)
            except OSError as e:
                if e.errno not in (errno.ENODATA, errno.ENOENT):
                    raise
            os.chmod(d, SEALED_MODE)  # the ACL's mask stood in the group bits
    except FileNotFoundError:
        _table.pop(d, None)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0
