"""The fallback when bubblewrap is missing or unusable: util-linux ``unshare`` + ``setpriv``.

This gives no private filesystem view (the child sees the host's files with its uid's
permissions), but still a network namespace with nothing in it, a pid namespace (so the whole
tree dies with its first process) and no capabilities with no_new_privs.

As root the chain is ``unshare`` (root, makes the namespaces) -> ``setpriv`` (drops to the
sandbox uid) -> the command. Without root it needs unprivileged user namespaces and maps us
to root inside a new one, which ``setpriv`` then strips of every capability.
"""

from __future__ import annotations

import shutil
from typing import Sequence

NS_FLAGS = ["--net", "--pid", "--fork", "--kill-child", "--mount-proc", "--ipc", "--uts"]
HARDEN = ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]

def find() -> tuple[str, str] | None:
    u, s = shutil.which("unshare"), shutil.which("setpriv")
    return (u, s) if u and s else None


def build(tools: tuple[str, str], argv: Sequence[str], *, drop: list[str]) -> list[str]:
    """``drop``: the setpriv prefix that changes uid (empty when we are not root).
    ``argv`` should start with the pid-1 shell (pid1.py): unshare makes it pid 1."""
    unshare, setpriv = tools
    if drop:
        return [unshare, *NS_FLAGS, "--", *drop, *argv]
    return [unshare, "--user", "--map-root-user", *NS_FLAGS, "--", setpriv, *HARDEN, "--",
            *argv]
