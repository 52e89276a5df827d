"""The warm grader's process INSIDE the sandbox: imports Python, pytest, torch, this runner and
a problem's handbook modules once, then forks once per suite run (docs/SANDBOX.md, section 6).

    python -P -s -m judge_runner.forkserver.zygote --control-fd N --seccomp-fd M [--preload NAME]...

It runs as root inside one bubblewrap sandbox (no network, its own pids, a read-only view;
only the capabilities a per-run setup needs) and holds no secret: the host's temporary folder
is bound read-only at HOST (the grading folders in it are sealed, see grants.py), and nothing
in it is read before a fork. Each run, per request on the control socket:

    zygote --fork--> C: tells the host its pid (SCM_CREDENTIALS: the host sees its own pid
                        number), waits until the host has put it in the run's cgroups; then a
                        new mount, pid, network, IPC and UTS namespace; a fresh /tmp and
                        /dev/shm; the run's read-only binds and its capped scratch tmpfs;
                        its writable folders (detached copies of the host's mounts, sent
                        as descriptors); HOST unmounted; forks
                   G:  pid 1 of the new pid namespace: mounts its /proc, forks, reaps, exits
                        with the runner's status (128+N for signal N, as pid1.py's shell)
                   R:  rlimits, no groups, the run's uid and gid (every capability gone),
                        no_new_privs, the seccomp filter, only its own descriptors, the run's
                        environment and cwd; then the runner's main(), which imports the
                        submission (or, for an imported problem's submission side, serve's
                        main(), which imports it after the trusted side's "go"). Nothing of
                        the submission exists before this point.

Standard library only, relative imports (copied into the sandbox as ``judge_runner``). What
the host sends per run is control.RunRequest.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import importlib
import json
import os
import pkgutil
import selectors
import socket
import struct
import sys

from .control import SETUP_FAILED, SETUP_PREFIX, RunRequest

HOST = "/.judge-host"          # the host's temporary folder, read-only, until each fork unmounts it

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
NR_MOVE_MOUNT, MOVE_MOUNT_F_EMPTY_PATH, AT_FDCWD = 429, 0x4, -100
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, PR_CAPBSET_DROP = 1, 38, 22, 24
SECCOMP_MODE_FILTER = 2
CAP_LAST = 63

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


CAP_VERSION_3 = 0x20080522


def _ok(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src, target, fstype, flags, data=None) -> None:
    _ok(_libc.mount(None if src is None else os.fsencode(src), os.fsencode(target),
                    None if fstype is None else fstype.encode(), ctypes.c_ulong(flags),
                    None if data is None else data.encode()), f"mount {target}")


def _bind_ro(src: str, target: str) -> None:
    if os.path.isdir(src):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            open(target, "a").close()
    _mount(src, target, None, MS_BIND | MS_REC)
    _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def preload(names: list[str], forbid: frozenset[str] = frozenset()) -> dict[str, str]:
    """Import what every run imports anyway; {name: "ok" or why not}. A handbook module that
    fails here (it may import the submission's module) is left for each run to import, and so
    is one whose import brought in a module of ``forbid``: an imported problem's served
    modules, which its submission's process must import as the trusted side's stand-ins
    (proxy/served.py installs one only where the name is not imported yet)."""
    out = {}
    for name in ["torch", "pytest", *names]:
        before = set(sys.modules)
        try:
            importlib.import_module(name)
            brought = sorted(forbid & (set(sys.modules) - before))
            if brought:
                raise ImportError(f"it imports {', '.join(brought)}, which is served")
            out[name] = "ok"
        except BaseException as exc:  # noqa: BLE001 - whatever it is, the run will see it
            for m in set(sys.modules) - before:
                sys.modules.pop(m, None)
            out[name] = f"{type(exc).__name__}: {exc}"
    import _pytest

    for info in pkgutil.walk_packages(_pytest.__path__, "_pytest."):
        try:
            importlib.import_module(info.name)
        except BaseException:  # noqa: BLE001 - optional parts (e.g. a missing extra)
            pass
    from .. import __main__ as _runner_main  # noqa: F401  (its imports, not its main)
    from .. import plugin  # noqa: F401
    from ..proxy import serve, trusted  # noqa: F401  (both sides of an imported problem)
    return out


def cuda_touched() -> str:
    """Why no fork of this process could use CUDA, or "": CUDA does not survive fork, so a
    context made here, or the driver merely initialized (`torch.cuda.is_available()` does
    that unless PYTORCH_NVML_BASED_CUDA_CHECK=1), would be unusable in every fork."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return "torch initialized CUDA"
    except Exception:  # noqa: BLE001 - a torch without CUDA support
        pass
    # cuInit opens /dev/nvidia-uvm and keeps it open; merely loading libcuda.so (which some
    # torch builds do at import) or asking NVML (which opens nvidiactl) does not break a fork
    for fd in _open_fds():
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "/dev/nvidia-uvm":
                return "the CUDA driver was initialized (/dev/nvidia-uvm is open)"
        except OSError:
            continue
    return ""


def _child_setup(req: RunRequest, gate: socket.socket, fds: dict[int, int], seccomp: bytes,
                 trees: list[int]) -> int:
    """C, G and R as the module doc says; returns the exit status of C. ``trees``: the
    detached mounts of req.rw_binds, in order (forkserver.detached_copy)."""
    gate.sendmsg([b"ready"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS,
                               struct.pack("3i", os.getpid(), os.getuid(), os.getgid()))])
    if gate.recv(16) != b"go":
        return SETUP_FAILED
    _ok(_libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS),
        "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    # A Python under /tmp (a clone in /tmp with its venv there) is bound over the zygote's
    # /tmp, as over a cold run's: held open before the fresh /tmp hides it, bound back on it.
    # Without it the run imported only what the zygote had imported already.
    held = [(p, os.open(p, os.O_PATH | os.O_CLOEXEC)) for p in req.tmp_roots]
    tmp = f"size={req.tmp_bytes},mode=1777"
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, tmp)
    for path, fd in held:
        _bind_ro(f"/proc/self/fd/{fd}", path)
        os.close(fd)
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, tmp)
    for host, inside in req.binds:
        _bind_ro(HOST + host[len(req.host_tmp):], inside)
    scratch = req.scratch
    os.makedirs(scratch, exist_ok=True)
    if req.scratch_bytes:  # a filesystem of the run's own, as scratchfs.py mounts one
        _mount("judge-scratch", scratch, "tmpfs", MS_NOSUID | MS_NODEV,
               f"size={req.scratch_bytes},nr_inodes={req.scratch_files + 1},"
               f"mode=0700,uid={req.uid},gid={req.gid}")
    else:  # the host folder, writable: the only one
        _mount(HOST + scratch[len(req.host_tmp):], scratch, None, MS_BIND)
        _mount(None, scratch, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV)
    for path, tree in zip(req.rw_binds, trees, strict=True):
        _attach(tree, path)
    _ok(_libc.umount2(HOST.encode(), MNT_DETACH), "umount host")
    _ok(_libc.sethostname(b"sandbox", 7), "sethostname")
    g = os.fork()
    if g == 0:
        try:
            os._exit(_pid1(req, fds, seccomp))
        except BaseException as exc:  # noqa: BLE001
            _say_setup(exc)
            os._exit(SETUP_FAILED)
    _, status = os.waitpid(g, 0)
    try:  # the scratch filesystem goes with this namespace: say now whether it was full
        if not req.scratch_bytes:
            raise OSError("a host folder")
        st = os.statvfs(scratch)
        gate.send(json.dumps({"disk_full": st.f_bfree == 0 or st.f_ffree == 0}).encode())
    except OSError:
        pass
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else \
        128 + os.WTERMSIG(status)


def _attach(tree: int, target: str) -> None:
    """A detached mount the host sent, attached at ``target`` in this run's namespace,
    writable, nosuid and nodev as a cold run's bwrap --bind is (move_mount(2), Linux 5.2)."""
    os.makedirs(target, exist_ok=True)
    _ok(_libc.syscall(NR_MOVE_MOUNT, tree, b"", AT_FDCWD, os.fsencode(target),
                      MOVE_MOUNT_F_EMPTY_PATH), f"move_mount {target}")
    os.close(tree)
    _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV)


def _pid1(req: RunRequest, fds: dict[int, int], seccomp: bytes) -> int:
    _libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    r = os.fork()
    if r == 0:
        try:
            _become_run(req, fds, seccomp)
        except BaseException as exc:  # noqa: BLE001
            _say_setup(exc)
            os._exit(SETUP_FAILED)
        _run_runner(req)  # never returns
    while True:
        pid, status = os.wait()
        if pid == r:
            return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else \
                128 + os.WTERMSIG(status)


def _become_run(req: RunRequest, fds: dict[int, int], seccomp: bytes) -> None:
    import resource

    # The descriptors first: the run's numbers are the host's (a busy host's results pipe may
    # be fd 300), and under RLIMIT_NOFILE (256) dup2 to such a number fails with EBADF. A cold
    # run inherits the same numbers before its limit is set; so does this one.
    _place_fds(fds)
    for rid, (soft, hard) in req.rlimits.items():
        resource.setrlimit(int(rid), (soft, hard))
    for cap in range(CAP_LAST + 1):  # not just the effective set: the bounding set too
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    uid, gid = req.uid, req.gid
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)  # from root to a non-root uid: every capability is gone
    _clear_inheritable()
    _ok(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    buf = ctypes.create_string_buffer(seccomp, len(seccomp))
    prog = _SockFprog(len(seccomp) // 8, ctypes.cast(buf, ctypes.c_void_p))
    _ok(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")
    os.chdir(req.scratch)
    os.environ.clear()
    os.environ.update(req.env)
    path = [p for p in req.env.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = path + [p for p in sys.path if p not in req.warm_paths]
    importlib.invalidate_caches()


def _clear_inheritable() -> None:
    """Every capability set empty, as in a cold run (bwrap --cap-drop ALL): the uid change
    emptied the permitted and effective sets, but the inheritable one keeps what bwrap's
    --cap-add gave the zygote (SETUID, SETGID, SETPCAP, SYS_ADMIN: CapInh 0x2001c0), and an
    exec of a file whose inheritable file capabilities name them would be handed them back
    (no_new_privs refuses that too: this is the second wall, as in a cold run)."""
    head = _CapHeader(CAP_VERSION_3, 0)
    data = (_CapData * 2)()  # two 32-bit halves, all zero
    _ok(_libc.capset(ctypes.byref(head), data), "capset")


def _place_fds(fds: dict[int, int]) -> None:
    """/dev/null as stdin and the received descriptors under the numbers the run uses, every
    other descriptor closed. Each one is first moved above every target, so that placing one
    never overwrites another not yet placed (a received fd may carry a later target's number)."""
    import fcntl

    top = max([2, *fds]) + 1
    moved = {target: fcntl.fcntl(fd, fcntl.F_DUPFD, top) for target, fd in fds.items()}
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    keep = {0, 1, 2}
    for target, fd in moved.items():
        os.dup2(fd, target, inheritable=True)
        keep.add(target)
    for fd in _open_fds():
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _open_fds() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 1024))


def _run_runner(req: RunRequest) -> None:
    """The runner's main(), serve's main() (an imported problem's submission side), or
    (main "code": what ``python -c CODE ARGS`` would run) a program of the host's, as the
    sandbox's own tests run one on either path; each on ``req.args``."""
    from .. import __main__ as runner
    from ..proxy import serve

    status = 70
    try:
        if req.main == "code":
            status = _run_code(req.code, req.args)
        elif req.main == "serve":
            sys.argv = [serve.__file__, *req.args]
            status = serve.main(req.args)
        else:
            sys.argv = [runner.__file__, *req.args]  # as `python -m` sets it
            status = runner.main(req.args)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(status)


def _run_code(code: str, args: list[str]) -> int:
    import traceback

    sys.argv = ["-c", *args]
    try:
        exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
    except SystemExit as e:
        c = e.code
        if c is None or isinstance(c, int):
            return c or 0
        print(c, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - as the interpreter reports it
        traceback.print_exc()
        return 1
    return 0


def _say_setup(exc: BaseException) -> None:
    try:
        os.write(2, SETUP_PREFIX + f"{type(exc).__name__}: {exc}\n".encode())
    except OSError:
        pass


def _fork_run(req: RunRequest, fds: list[int], seccomp: bytes) -> tuple[int, socket.socket]:
    out_w, err_w, gate_fd, *rest = fds
    passed, trees = rest[:len(req.pass_fds)], rest[len(req.pass_fds):]
    gate = socket.socket(fileno=gate_fd)
    pid = os.fork()
    if pid == 0:
        try:
            mapping = {1: out_w, 2: err_w}
            mapping.update(zip(req.pass_fds, passed))
            code = _child_setup(req, gate, mapping, seccomp, trees)
        except BaseException as exc:  # noqa: BLE001
            os.dup2(err_w, 2)
            _say_setup(exc)
            code = SETUP_FAILED
        os._exit(code)
    for fd in (out_w, err_w, *rest):
        os.close(fd)
    return pid, gate


def serve(control: socket.socket, seccomp: bytes) -> None:
    children: dict[int, socket.socket] = {}
    sel = selectors.DefaultSelector()
    sel.register(control, selectors.EVENT_READ)
    while True:
        if sel.select(0.02 if children else None):
            try:
                msg, anc, _, _ = control.recvmsg(1 << 16, socket.CMSG_SPACE(64 * 4))
            except ConnectionResetError:  # the host exited with a request unread
                msg, anc = b"", []
            if not msg:
                break  # the host is gone or replaces us: the runs in flight finish alone
            fds = []
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds += list(struct.unpack(f"{len(data) // 4}i", data[:len(data) // 4 * 4]))
            pid, gate = _fork_run(RunRequest.decode(msg), fds, seccomp)
            children[pid] = gate
        _reap(children, block=False)
    _reap(children, block=True)


def _reap(children: dict, block: bool) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        gate = children.pop(pid, None)
        if gate is not None:
            try:
                gate.send(json.dumps({"status": status}).encode())
            except OSError:
                pass
            gate.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="judge_runner.forkserver.zygote")
    p.add_argument("--control-fd", type=int, required=True)
    p.add_argument("--seccomp-fd", type=int, required=True)
    p.add_argument("--preload", action="append", default=[])
    p.add_argument("--served", action="append", default=[],
                   help="a served module: never imported here (preload)")
    args = p.parse_args(argv)
    with os.fdopen(args.seccomp_fd, "rb") as f:
        seccomp = f.read()
    control = socket.socket(fileno=args.control_fd)
    loaded = preload(args.preload, frozenset(args.served))
    # What the zygote made lives as long as every fork: out of the collector's sight, a fork's
    # full collections (pytest runs several at its end, each ~0.1 s over torch's and pytest's
    # objects) walk only the run's own objects, and touch no shared page (no copy-on-write).
    gc.collect()
    gc.freeze()
    control.send(json.dumps({"ready": os.getpid(), "preloaded": loaded,
                             "cuda_touched": cuda_touched()}).encode())
    serve(control, seccomp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
