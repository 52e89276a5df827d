"""A small seccomp deny-list, handed to bwrap (``--seccomp FD``) as a classic BPF program.

It refuses (EPERM) system calls a submission never needs and that widen the kernel surface
it can reach: debugging other processes, mounting, kernel modules and keyrings, BPF,
perf events, userfaultfd, io_uring, namespace changes, the clock. Syscalls of a foreign ABI
(32-bit calls on x86-64) kill the process. Only x86-64 has a table here; elsewhere the layer
is reported missing rather than guessed.

It also closes the page cache as a channel between runs (issue 20): the host's read-only
files are shared, so a hidden run that read pages of a cold file left them cached, and the
next submission's public run read the pattern back with `preadv2(RWF_NOWAIT)` (1,000 bytes of
hidden tests per pair of submissions). Refused here: asking whether a page is cached
(`RWF_NOWAIT` on preadv2/pwritev2 -> EOPNOTSUPP, as where the kernel lacks it; `mincore`,
`cachestat` -> ENOSYS), and evicting pages of a shared file (`fadvise64(DONTNEED)`,
`madvise(MADV_COLD / MADV_PAGEOUT)`: hints, answered 0 and not done). What is left is timing a
read (PROBES lists what is refused; docs/SANDBOX.md the rest).

The first six instructions load the arch, check it, load the number and refuse x32, leaving
A = the syscall number; everything after them jumps only within itself (forkserver.py adds
its own checks between the two parts).
"""

from __future__ import annotations

import os
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_BIT = 0x40000000
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
RET_KILL_PROCESS = 0x80000000
EPERM, ENOSYS = 1, 38
LD_ABS_W, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
EOPNOTSUPP = 95
ARGS = 16            # offsetof(struct seccomp_data, args): 8 bytes each, low word first

NR_MADVISE, NR_MINCORE, NR_FADVISE64, NR_PREADV2, NR_PWRITEV2, NR_CACHESTAT = (
    28, 27, 221, 327, 328, 451)
RWF_NOWAIT = 0x8
POSIX_FADV_DONTNEED, MADV_COLD, MADV_PAGEOUT = 4, 20, 21
# what a run could learn or change of the host's page cache with, and what it is answered
PROBES = {"preadv2/pwritev2 RWF_NOWAIT": "EOPNOTSUPP", "mincore": "ENOSYS",
          "cachestat": "ENOSYS", "fadvise64 DONTNEED": "0, not done",
          "madvise MADV_COLD/MADV_PAGEOUT": "0, not done"}

DENIED_X86_64 = {
    "ptrace": 101, "syslog": 103, "acct": 163, "settimeofday": 164, "mount": 165,
    "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169, "sethostname": 170,
    "setdomainname": 171, "iopl": 172, "ioperm": 173, "init_module": 175,
    "delete_module": 176, "quotactl": 179, "lookup_dcookie": 212, "clock_settime": 227,
    "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272,
    "perf_event_open": 298, "fanotify_init": 300, "name_to_handle_at": 303,
    "open_by_handle_at": 304, "setns": 308, "process_vm_readv": 310,
    "process_vm_writev": 311, "kcmp": 312, "finit_module": 313, "kexec_file_load": 320,
    "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_getfd": 438,
    "mount_setattr": 442,
}


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() in ("x86_64", "amd64")


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


# (op, jt, jf, k) with jt/jf a label or a plain offset, or ("label", name)
_Line = tuple[int, int | str, int | str, int] | tuple[str, str]


def _assemble(code: list[_Line]) -> bytes:
    """(op, jt, jf, k) with jt/jf a label (str) or a plain offset; ("label", name) marks the
    next instruction."""
    at: dict[str, int] = {}
    out: list[bytes] = []
    i = 0
    for c in code:
        if len(c) == 2:  # ("label", name)
            at[c[1]] = i
        else:
            i += 1
    i = 0
    for c in code:
        if len(c) == 2:
            continue
        op, jt, jf, k = c
        rel = [at[j] - i - 1 if isinstance(j, str) else j for j in (jt, jf)]
        out.append(_insn(op, rel[0], rel[1], k))
        i += 1
    return b"".join(out)


# What a run may be let do that the list refuses, and why: LeakSanitizer stops the threads of
# its own process with ptrace to scan their stacks (a C++ run built with AddressSanitizer,
# judge/grading/cpp/); the run's tree is one uid in its own pid namespace, so it can trace
# only itself. Kernels since 4.8 check seccomp again after a tracer changes a syscall.
ALLOWABLE = {"ptrace"}


def program(allow: frozenset[str] = frozenset()) -> bytes:
    """The filter as raw ``struct sock_filter`` entries; `allow`: names of ALLOWABLE that
    this run's filter lets through."""
    if not set(allow) <= ALLOWABLE:
        raise ValueError(f"only {sorted(ALLOWABLE)} can be allowed, not {sorted(allow)}")
    let_through = frozenset(allow)
    ok, eperm, enosys, zero = (RET, 0, 0, RET_ALLOW), (RET, 0, 0, RET_ERRNO | EPERM), \
        (RET, 0, 0, RET_ERRNO | ENOSYS), (RET, 0, 0, RET_ERRNO | 0)
    code: list[_Line] = [
        (LD_ABS_W, 0, 0, 4),                        # A = seccomp_data.arch
        (JEQ, 1, 0, AUDIT_ARCH_X86_64),
        (RET, 0, 0, RET_KILL_PROCESS),              # another ABI (i386 via int 0x80)
        (LD_ABS_W, 0, 0, 0),                        # A = seccomp_data.nr
        (JGE, 0, 1, X32_BIT),
        (RET, 0, 0, RET_ERRNO | ENOSYS),            # the x32 ABI
        (JEQ, "rwf", 0, NR_PREADV2), (JEQ, "rwf", 0, NR_PWRITEV2),
        (JEQ, "fadvise", 0, NR_FADVISE64), (JEQ, "madvise", 0, NR_MADVISE),
        (JEQ, "enosys", 0, NR_MINCORE), (JEQ, "enosys", 0, NR_CACHESTAT),
    ]
    code += [(JEQ, "eperm", 0, nr) for name, nr in sorted(DENIED_X86_64.items(),
                                                          key=lambda kv: kv[1])
             if name not in let_through]
    code += [ok,
             ("label", "rwf"), (LD_ABS_W, 0, 0, ARGS + 5 * 8),       # flags (low word)
             (JSET, 0, "allow", RWF_NOWAIT), (RET, 0, 0, RET_ERRNO | EOPNOTSUPP),
             ("label", "fadvise"), (LD_ABS_W, 0, 0, ARGS + 3 * 8),   # advice
             (JEQ, "zero", "allow", POSIX_FADV_DONTNEED),
             ("label", "madvise"), (LD_ABS_W, 0, 0, ARGS + 2 * 8),   # advice
             (JEQ, "zero", 0, MADV_COLD), (JEQ, "zero", "allow", MADV_PAGEOUT),
             ("label", "allow"), ok, ("label", "zero"), zero,
             ("label", "eperm"), eperm, ("label", "enosys"), enosys]
    return _assemble(code)


def program_fd(allow: frozenset[str] = frozenset()) -> int:
    """A pipe's read end holding the program, for bwrap to read (it fits the pipe buffer)."""
    r, w = os.pipe()
    try:
        os.write(w, program(allow))
    finally:
        os.close(w)
    return r
