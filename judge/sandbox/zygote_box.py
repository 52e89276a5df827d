"""The zygote's bubblewrap command and the seccomp program its forks load (forkserver.py).

The command is a cold run's (bwrap.build: the same read-only system, Python, passwd, /proc,
/dev, /tmp; no network, its own pid, IPC and UTS namespaces) with what a per-run setup needs:
no user namespace (a one-uid one cannot map the run's slot uid), four capabilities kept, the
host's temporary folder at HOST, and the folders above mount points made 0755 first.
"""

from __future__ import annotations

import os

from judge.sandbox import accounts, bwrap, pid1, seccomp
from judge.sandbox import limits as limits_mod

HOST = "/.judge-host"   # zygote.HOST
ZYGOTE_CAPS = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")
CLONE_NEWUSER = 0x10000000
NR_CLONE, NR_CLONE3 = 56, 435
JSET = 0x45


def zygote_command(probe, argv: list[str], libs, env: dict, scratch: str,
                   host_tmp: str, device: str = "cpu") -> list[str]:
    """``device`` "cuda": the GPU's device nodes and /sys paths bound as a cold CUDA run's are
    (bwrap.build), so that each fork can open the GPU the zygote itself never touches."""
    cmd = bwrap.build(probe.bwrap_path, pid1.wrap(argv), scratch=scratch, ro_binds=list(libs),
                      env=env, tmp_bytes=64 * limits_mod.MIB, device=device,
                      feats=probe.bwrap_features, seccomp_fd=None,
                      passwd=accounts.passwd_files())
    # read-write: a run without a filesystem of its own writes to its host scratch folder;
    # each fork binds only its own paths, read-only but for that one (zygote.py)
    at = cmd.index("--remount-ro")
    cmd = _zygote_flags(cmd[:at] + ["--bind", host_tmp, HOST] + cmd[at:])
    # bwrap run as root makes the folders above a mount point 0700 (/work above a venv):
    # made first, 0755, each run's uid can pass through them
    at = cmd.index("--hostname")
    cmd[at:at] = [a for d in _parents(cmd) for a in ("--perms", "0755", "--dir", d)]
    return cmd


def run_program() -> bytes:
    """The cold run's seccomp deny-list, plus what ``bwrap --disable-userns`` gives a cold run:
    no new user namespace (clone with CLONE_NEWUSER is refused; clone3, whose flags a classic
    filter cannot read, answers ENOSYS so libc falls back to clone)."""
    base = seccomp.program()
    head, rest = base[:6 * 8], base[6 * 8:]  # arch check, nr load, x32 check (seccomp.program)
    ins = seccomp._insn
    extra = [
        ins(seccomp.JEQ, 0, 4, NR_CLONE),
        ins(seccomp.LD_ABS_W, 0, 0, 16),                       # clone's flags (low word)
        ins(JSET, 0, 1, CLONE_NEWUSER),
        ins(seccomp.RET, 0, 0, seccomp.RET_ERRNO | seccomp.EPERM),
        ins(seccomp.LD_ABS_W, 0, 0, 0),                        # A = nr again
        ins(seccomp.JEQ, 0, 1, NR_CLONE3),
        ins(seccomp.RET, 0, 0, seccomp.RET_ERRNO | seccomp.ENOSYS),
    ]
    return head + b"".join(extra) + rest


def _zygote_flags(cmd: list[str]) -> list[str]:
    """bwrap.build's command for the zygote: no user namespace (it must change to the run's
    uid, which a one-uid user namespace cannot map) and, after --cap-drop ALL, the few
    capabilities each fork needs before it drops them all."""
    out = []
    skip = {"--unshare-user", "--disable-userns"}
    it = iter(cmd)
    for a in it:
        if a in skip:
            continue
        if a == "--unshare-all":  # it includes --unshare-user-try
            out += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                    "--unshare-cgroup-try"]
            continue
        out.append(a)
        if a == "--cap-drop":
            out.append(next(it))
            for cap in ZYGOTE_CAPS:
                out += ["--cap-add", cap]
    return out


def _parents(cmd: list[str]) -> list[str]:
    """The folders above every bind's destination that bwrap would have to make."""
    out: list[str] = []
    for i, a in enumerate(cmd):
        if a in ("--ro-bind", "--bind", "--ro-bind-try", "--dev-bind") and i + 2 < len(cmd):
            parts = cmd[i + 2].strip("/").split("/")[:-1]
            for k in range(1, len(parts) + 1):
                d = "/" + "/".join(parts[:k])
                if d not in out and not os.path.islink(d) and d not in ("/usr", "/etc",
                                                                         "/sys", "/dev"):
                    out.append(d)
    return sorted(out, key=lambda d: d.count("/"))
