"""A small seccomp deny-list, handed to bwrap (``--seccomp FD``) as a classic BPF program.

It refuses (EPERM) system calls a submission never needs and that widen the kernel surface
it can reach: debugging other processes, mounting, kernel modules and keyrings, BPF,
perf events, userfaultfd, io_uring, namespace changes, the clock. Syscalls of a foreign ABI
(32-bit calls on x86-64) kill the process. Only x86-64 has a table here; elsewhere the layer
is reported missing rather than guessed.
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
LD_ABS_W, JEQ, JGE, RET = 0x20, 0x15, 0x35, 0x06

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


def program() -> bytes:
    """The filter as raw ``struct sock_filter`` entries."""
    nrs = sorted(DENIED_X86_64.values())
    head = [
        _insn(LD_ABS_W, 0, 0, 4),                   # A = seccomp_data.arch
        _insn(JEQ, 1, 0, AUDIT_ARCH_X86_64),
        _insn(RET, 0, 0, RET_KILL_PROCESS),         # another ABI (i386 via int 0x80)
        _insn(LD_ABS_W, 0, 0, 0),                   # A = seccomp_data.nr
        _insn(JGE, 0, 1, X32_BIT),
        _insn(RET, 0, 0, RET_ERRNO | ENOSYS),       # the x32 ABI
    ]
    n = len(nrs)
    body = [_insn(JEQ, n - i, 0, nr) for i, nr in enumerate(nrs)]  # -> the EPERM at the end
    tail = [_insn(RET, 0, 0, RET_ALLOW), _insn(RET, 0, 0, RET_ERRNO | EPERM)]
    return b"".join(head + body + tail)


def program_fd() -> int:
    """A pipe's read end holding the program, for bwrap to read (it fits the pipe buffer)."""
    r, w = os.pipe()
    try:
        os.write(w, program())
    finally:
        os.close(w)
    return r
