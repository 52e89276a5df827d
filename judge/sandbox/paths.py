"""Checking the paths a run mounts: normalized, existing, and reachable by the sandbox uid.

bwrap resolves bind sources as the unprivileged sandbox uid, so a source inside a root-only
directory (``tempfile.mkdtemp()`` makes them 0700) fails with a bwrap error that would look
like the submission's. Checking first turns that into a clear judge-side error.
"""

from __future__ import annotations

import os
import stat
from typing import Iterable

from judge.sandbox import grants

R, W, X = 4, 2, 1


def normalize_binds(binds: Iterable[tuple[str, str] | str]) -> list[tuple[str, str]]:
    out = []
    for b in binds:
        host, inside = (b, b) if isinstance(b, (str, os.PathLike)) else b
        host, inside = os.fspath(host), os.fspath(inside)
        if not os.path.isabs(inside):
            raise ValueError(f"bind target must be an absolute path: {inside!r}")
        host = os.path.abspath(host)
        if not os.path.exists(host):
            raise FileNotFoundError(f"bind source does not exist: {host}")
        out.append((host, os.path.normpath(inside)))
    return out


def _allows(st: os.stat_result, uid: int, gid: int, need: int, path: str = "") -> bool:
    acl = grants.granted(path, uid) if path and st.st_uid != uid else None
    if acl is not None:  # a sealed grading folder this run was let into (grants.py)
        return acl & need == need
    if st.st_uid == uid:
        bits = st.st_mode >> 6
    elif st.st_gid == gid:
        bits = st.st_mode >> 3
    else:
        bits = st.st_mode
    return bits & need == need


def check_reachable(paths: Iterable[str], uid: int, gid: int) -> str | None:
    """None when ``uid`` can reach and read every path, else a sentence saying which not."""
    for path in paths:
        parts = path.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i]) or "/"
            if not _allows(os.stat(d), uid, gid, X, d):
                return (f"uid {uid} cannot enter {d}, so {path} cannot be mounted in the "
                        f"sandbox: make {d} world-searchable (chmod o+x) or stage files "
                        "elsewhere")
        st = os.stat(path)
        need = R | X if stat.S_ISDIR(st.st_mode) else R
        if not _allows(st, uid, gid, need, path):
            return f"uid {uid} cannot read {path}: make it world-readable (chmod o+r)"
    return None


def under(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it (both as given: resolve links first)."""
    return path == root or path.startswith(root.rstrip("/") + "/")
