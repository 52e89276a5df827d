"""The host's side of a warm grader: one long-lived zygote inside bubblewrap (the in-sandbox
half is judge/runner/forkserver/: zygote.py, and control.py, the run request both halves
read), and ``ForkServer.run`` with ``run_sandboxed``'s arguments and result, so a suite run
can take either path (docs/SANDBOX.md, section 6).

    server = ForkServer.start(lib_paths=[handbook, runner_parent], preload=["kvcache"])
    result = server.run(argv, ro_binds=..., scratch=..., env=..., limits=..., monitor=...,
                        pass_fds=(w,), readers={r: take})

What the host does per run is what run_sandboxed does: a slot uid of the run's own, the sealed
grading folders opened to it for the run (grants), the run's cgroups (memory, pids, cpu), the
watch over its output, clocks and scratch filesystem, and the kill of everything left at the
end (cgroup, then the uid). What bwrap and the gate shell do in a cold run the zygote's fork
does before the submission's first byte (see zygote.py). ``WarmUnavailable`` means this run
cannot go warm (no bwrap, not root, a bind outside the temporary folder, a dead zygote): the
caller runs it cold.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import struct
import sys
import tempfile
import threading
import time
from typing import TYPE_CHECKING, Sequence

from judge.runner.forkserver.control import SETUP_FAILED, SETUP_PREFIX, RunRequest
from judge.sandbox import accounts, cgroups, grants, scratchfs, seccomp, system_image
from judge.sandbox import limits as limits_mod
from judge.sandbox.bwrap import python_roots
from judge.sandbox.layers import SECURITY_LAYERS, mode_layers, probe_layers
from judge.sandbox.limits import Limits
from judge.sandbox.paths import check_reachable, normalize_binds, under
from judge.sandbox.procs import cleanup, close, disk_guard, high, kill, pipe, stop_tree
from judge.sandbox.result import SandboxResult, classify
from judge.sandbox.run import (
    BASE_ENV,
    DEFAULT_SCRATCH_FILES,
    WRAPPER_PROCS,
    SandboxError,
)
from judge.sandbox.usage import TreeMeter
from judge.sandbox.watch import Watch, drain, watch
from judge.sandbox.zygote_box import run_program, zygote_command

if TYPE_CHECKING:
    import subprocess

BIND_ELSEWHERE = "a bind to another path inside (only a cold run can move a path)"
START_TIMEOUT_S = 60.0
GATE_TIMEOUT_S = 10.0
NR_OPEN_TREE = 428        # one number on every architecture (the syscalls added since 5.1)
OPEN_TREE_CLONE = 1
AT_FDCWD = -100
Program = tuple[str, list[str], str]  # what a fork runs: RunRequest's main, args and code


class WarmUnavailable(RuntimeError):
    """This run cannot take the warm path; run it cold."""


class WarmSetupFailed(RuntimeError):
    """A fork failed before the command's first byte ran; its pass_fds are closed, as
    run_sandboxed closes them: the caller runs it cold with new ones (grading/launch.py).
    Raised by grading/warm_pool.py's spawner; here, beside WarmUnavailable, so that what
    catches it (launch.py, proxied.py) needs nothing of the pool."""


def warm_possible() -> tuple[bool, str]:
    """(works, why not) without starting anything."""
    probe = probe_layers()
    if not sys.platform.startswith("linux") or not accounts.is_root():
        return False, "a warm grader needs Linux and root (it mounts and changes uid per run)"
    if probe.mode != "bwrap":
        return False, f"a warm grader needs bubblewrap (sandbox mode here: {probe.mode})"
    if not seccomp.supported():
        return False, "no seccomp table for this machine: runs stay cold"
    return True, ""


_starter_lock = threading.Lock()
_starter: list = []  # [queue of (job, reply queue)] once the thread runs


def _in_lasting_thread(job):
    """``job()`` run by one thread that lives as long as this process. bwrap's
    --die-with-parent is PR_SET_PDEATHSIG, which fires when the *thread* that forked it ends:
    a zygote started by a thread that then finished (a start-up prewarm, a grading thread of
    `judge check`) was killed under the threads still using it."""
    import queue

    with _starter_lock:
        if not _starter:
            jobs: queue.Queue = queue.Queue()

            def loop():
                while True:
                    fn, reply = jobs.get()
                    try:
                        reply.put((True, fn()))
                    except BaseException as exc:  # noqa: BLE001 - raised in the caller
                        reply.put((False, exc))
            threading.Thread(target=loop, name="judge-zygote-starter", daemon=True).start()
            _starter.append(jobs)
    reply: queue.Queue = queue.Queue()
    _starter[0].put((job, reply))
    ok, value = reply.get()
    if not ok:
        raise value
    return value


class ForkServer:
    # set by start() once the zygote answered
    _proc: subprocess.Popen[bytes]
    _zscratch: str
    tmp_roots: list[str]  # Python's trees under /tmp, which each fork's fresh /tmp would hide
    resident: bool        # it sees system_image's copy of the host's files

    def __init__(self, proc_pid: int, control: socket.socket, lib_root: str | None,
                 preloaded: dict, host_tmp: str, warm_paths: list[str], device: str = "cpu"):
        self.device = device
        self.pid, self.control, self.lib_root = proc_pid, control, lib_root
        self.preloaded, self.host_tmp, self.warm_paths = preloaded, host_tmp, warm_paths
        self.lock = threading.Lock()
        self.runs = 0
        self.dead = False

    # -- life ---------------------------------------------------------------------------

    @classmethod
    def start(cls, libs: list[tuple[str, str]], preload: Sequence[str] = (), *,
              env: dict | None = None, lib_root: str | None = None,
              device: str = "cpu", served: Sequence[str] = ()) -> ForkServer:
        """A zygote that sees ``libs`` ((host folder, inside path) pairs, read-only, on its
        sys.path; inside paths outside /tmp, which each fork replaces) and has imported
        ``preload`` but none that brings in a module of ``served`` (an imported problem's
        served modules: its submission's forks get them as stand-ins); ``lib_root`` (a host
        folder holding them) is removed with it.

        ``device`` "cuda": it forks CUDA runs (and only those). CUDA does not survive fork:
        a context, or the driver merely initialized, in the zygote is unusable in every fork.
        So the zygote never touches CUDA, each fork makes the context its run uses and keeps
        it for the run's life, and a zygote whose preload touched CUDA is refused here."""
        if device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', not {device!r}")
        lib_paths = [inside for _, inside in libs]
        ok, why = warm_possible()
        if not ok:
            raise WarmUnavailable(why)
        host_tmp = os.path.realpath(tempfile.gettempdir())
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ctl = high(theirs.detach())
        sc = _seccomp_pipe()
        # named as grading folders are, so a later judge removes it if this one dies
        zscratch = tempfile.mkdtemp(prefix=f"judge-warmz-p{os.getpid()}-")
        os.chmod(zscratch, 0o700)
        argv = [sys.executable, "-P", "-s", "-m", "judge_runner.forkserver.zygote", "--control-fd",
                str(ctl), "--seccomp-fd", str(sc)] + [a for n in preload for a in
                                                       ("--preload", n)]
        argv += [a for n in served for a in ("--served", n)]
        zenv = dict(BASE_ENV, HOME=zscratch, **(env or {}))
        zenv["PYTHONPATH"] = os.pathsep.join(lib_paths)
        cmd = zygote_command(probe_layers(), argv, libs, zenv, zscratch, host_tmp, device)
        proc = _spawn(cmd, ctl, sc)
        hello = _hello(ours, proc, zscratch, device)
        server = cls(proc.pid, ours, lib_root, hello.get("preloaded", {}), host_tmp,
                     list(lib_paths), device)
        server._proc, server._zscratch = proc, zscratch
        # its view (and so every fork's) was fixed when bwrap.build made its command
        server.resident = system_image.in_use() is not None
        server.tmp_roots = [r for r in python_roots(sys.executable) if under(r, "/tmp")]
        return server

    def alive(self) -> bool:
        return not self.dead and self._proc.poll() is None

    def close(self) -> None:
        """Ends the zygote (runs in flight finish: their forks are not its threads)."""
        self.dead = True
        try:
            self.control.close()
        except OSError:
            pass
        try:
            self._proc.wait(timeout=5)
        except Exception:  # noqa: BLE001
            kill(self._proc.pid)
            self._proc.wait()
        import shutil

        shutil.rmtree(self._zscratch, ignore_errors=True)
        if self.lib_root:
            for mnt in scratchfs.mounted_under(self.lib_root):  # warm_pool's tmpfs
                scratchfs.unmount(mnt)
            shutil.rmtree(self.lib_root, ignore_errors=True)

    # -- one run --------------------------------------------------------------------------

    def run(self, argv, ro_binds=(), scratch=None, env=None, limits: Limits | None = None,
            device="cpu", *, isolation="auto", monitor=None, pass_fds=(),
            readers=None, rw_binds=()) -> SandboxResult:
        """``run_sandboxed`` on the warm path; ``argv`` is ``python -P -s -m judge_runner
        ARGS`` (the fork runs the runner's main(ARGS)) or ``... -m judge_runner.proxy.serve ARGS``.
        ``pass_fds`` are closed as run_sandboxed closes them; a run whose setup failed
        (``setup_error``: nothing of the command ran) is run again cold by the caller, with
        new ones. ``rw_binds`` as run_sandboxed's: each goes to the fork as a detached copy
        of its mount (detached_copy)."""
        owned = list(pass_fds)
        try:
            return self._run(list(argv), (ro_binds, rw_binds), scratch, env,
                             limits or Limits(), device, monitor, owned, dict(readers or {}))
        except WarmUnavailable:  # nothing was handed over: the descriptors are the caller's
            raise
        except BaseException:
            for fd in owned:
                close(fd)
            raise

    def _run(self, argv, all_binds, scratch, env, limits, device, monitor, owned, readers):
        if device != self.device:
            raise WarmUnavailable(f"this zygote forks {self.device} runs, not {device} ones")
        program = _program(argv)
        if program is None:
            raise WarmUnavailable("only the judge's runner, its serve side or python -c "
                                  "runs warm")
        if not self.alive():
            raise WarmUnavailable("the zygote is gone")
        if scratch is None or not os.path.isdir(scratch):
            raise SandboxError(f"scratch dir {scratch} does not exist")  # as a cold run
        scratch = os.path.abspath(scratch)
        binds, rw = (normalize_binds(b) for b in all_binds)
        # the zygote reaches a run's files through its one bind of the temporary folder
        for path in [scratch] + [h for h, _ in binds + rw]:
            if not under(os.path.realpath(path), self.host_tmp):
                raise WarmUnavailable(f"{path} is outside {self.host_tmp}")
        if any(h != i for h, i in binds + rw):  # the judge's runs never move a path
            raise WarmUnavailable(BIND_ELSEWHERE)
        trees = _detached([h for h, _ in rw])
        try:
            return self._granted(program, scratch, binds, rw, env, limits, monitor, owned,
                                 readers, trees)
        finally:
            for fd in trees.values():  # the zygote has its own copies once they were sent
                close(fd)

    def _granted(self, program, scratch, binds, rw, env, limits, monitor, owned, readers,
                 trees) -> SandboxResult:
        probe = probe_layers()
        child_env = dict(BASE_ENV, HOME=scratch)
        child_env.update(env or {})
        warnings: list[str] = []
        with accounts.acquire() as acct:
            needed = [h for h, _ in binds + rw]
            if not limits.scratch_mb:  # the host folder itself is the run's scratch dir
                os.chown(scratch, acct.uid, acct.gid)
                os.chmod(scratch, 0o700)
                needed.append(scratch)
            with grants.grant(acct.uid, needed):
                problem = check_reachable(needed, acct.uid, acct.gid)
                if problem:
                    raise SandboxError(problem)  # as a cold run
                return self._fork(program, probe, acct, scratch, binds, child_env, limits,
                                  monitor, owned, readers, warnings, trees)

    def _fork(self, program: Program, probe, acct, scratch, binds, env, limits: Limits, monitor, owned,
              readers, warnings, trees: dict[str, int]) -> SandboxResult:
        layers = self._layers(probe, limits)
        nproc = limits.processes + WRAPPER_PROCS["bwrap"]
        cuda = self.device == "cuda"
        group = cgroups.for_run(probe.hierarchy, limits.memory_bytes, nproc, limits.cpus, cuda,
                                warnings, layers)
        rl = limits_mod.rlimits_for(limits, nproc=nproc,
                                    address_space=not layers["cgroup_memory"], cuda=cuda)
        layers["rlimit_nproc"] = True
        fds: list[int] = []
        out_r, out_w = pipe(fds)
        err_r, err_w = pipe(fds)
        gate, gate_z = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        gate.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        main, args, code = program
        req = RunRequest(
            main=main, args=args, code=code, env=env, binds=[list(b) for b in binds],
            rw_binds=list(trees), scratch=scratch, host_tmp=self.host_tmp,
            tmp_roots=self.tmp_roots, warm_paths=self.warm_paths, uid=acct.uid, gid=acct.gid,
            scratch_bytes=(limits.scratch_mb or 0) * limits_mod.MIB,
            scratch_files=limits.scratch_files or DEFAULT_SCRATCH_FILES,
            tmp_bytes=limits.tmp_mb * limits_mod.MIB, pass_fds=list(owned),
            rlimits={str(k): list(v) for k, v in rl.items()})
        pid = None
        try:
            self._hand_over(req, [out_w, err_w, gate_z.fileno(), *owned, *trees.values()],
                            fds, gate, gate_z)
            self.runs += 1
            for fd in (out_w, err_w):
                close(fd, fds)
            gate_z.close()
            for fd in list(owned):  # the fork's copies are enough (see run_sandboxed): the
                close(fd, owned)    # results pipe ends when the run does
            pid = self._forked_pid(gate)
            if group:
                group.add(pid)
            gate.send(b"go")
            guard = disk_guard(f"/proc/{pid}/root{scratch}", monitor) \
                if limits.scratch_mb else monitor
            w, status, disk_full, wall = _watch_fork(pid, gate, group, out_r, err_r, limits,
                                                     guard, readers)
        except BaseException:
            if pid is not None:
                kill(pid)
            cleanup(group, acct)
            raise
        finally:
            for fd in list(fds):
                close(fd, fds)
            gate.close()
        return _fork_result(w, status, disk_full, wall, group, acct, layers, limits, warnings)

    def _layers(self, probe, limits: Limits) -> dict:
        """What a fork runs under: the probe's layers, as a bwrap run's, on this zygote's
        device and view."""
        layers = dict(probe.layers)
        layers.update(mode_layers("bwrap", True, probe.bwrap_features), mode="bwrap",
                      device=self.device, grader_path="warm", run_fs=bool(limits.scratch_mb),
                      userns_disabled=True, resident_view=self.resident)
        return layers

    def _hand_over(self, req: RunRequest, passed: list[int], fds: list[int], gate: socket.socket,
                   gate_z: socket.socket) -> None:
        """The run's request and descriptors to the zygote; where that fails nothing was handed
        over (WarmUnavailable: the caller can run it cold)."""
        with self.lock:
            try:
                self.control.sendmsg([req.encode()], [
                    (socket.SOL_SOCKET, socket.SCM_RIGHTS,
                     struct.pack(f"{len(passed)}i", *passed))])
            except OSError as e:
                self.dead = True
                for fd in list(fds):
                    close(fd, fds)
                gate.close()
                gate_z.close()
                raise WarmUnavailable(f"the zygote is gone: {e}") from e

    def _forked_pid(self, gate: socket.socket) -> int:
        """The fork's pid, in our pid namespace, from the credentials it sends on its gate."""
        gate.settimeout(GATE_TIMEOUT_S)
        try:
            _, anc, _, _ = gate.recvmsg(16, socket.CMSG_SPACE(12))
        except OSError as e:
            self.dead = True
            raise SandboxError(f"the zygote's fork did not answer: {e}") from e
        creds = [d for lv, k, d in anc if lv == socket.SOL_SOCKET
                 and k == socket.SCM_CREDENTIALS]
        if not creds:
            self.dead = True
            raise SandboxError("the zygote's fork did not say who it is")
        return struct.unpack("3i", creds[0][:12])[0]


def _watch_fork(pid: int, gate: socket.socket, group, out_r: int, err_r: int, limits: Limits,
                guard, readers) -> tuple[Watch, int | None, bool, float]:
    """The run watched from its "go" to its end: (what watch saw, the fork's wait status,
    whether it filled its scratch filesystem, its wall time)."""
    start = time.monotonic()
    meter = TreeMeter(pid, group, start)
    w = watch(pid, out_r, err_r, deadline=start + limits.wall_s,
              cap=limits.output_bytes, cpu_limit_s=limits.cpu_s, meter=meter,
              monitor=guard, readers=readers)
    if w.stop is not None:
        w.usage = meter.sample()
        stop_tree(pid, group)
    status, disk_full = _status(gate)
    drain(readers, w)
    return w, status, disk_full, time.monotonic() - start


def _fork_result(w: Watch, status: int | None, disk_full: bool, wall: float, group, acct,
                 layers: dict, limits: Limits, warnings: list[str]) -> SandboxResult:
    """The fork's result, read as a cold bwrap run's, once what was left of it is killed."""
    tree_cpu = group.cpu_s() if group else None
    throttled = group.throttled_s() if group else None
    oom, hit_limit, peak = group.memory_stats() if group and layers["cgroup_memory"] else \
        (0, 0, None)
    if cleanup(group, acct):
        warnings.append("some processes of the run could not be killed")
    res = SandboxResult(None, None, bytes(w.stdout), bytes(w.stderr), wall, tree_cpu,
                        mode="bwrap", uid=acct.uid, max_memory_bytes=peak,
                        warnings=warnings, wait_s=w.usage.wait_s if w.usage else None,
                        throttled_s=throttled)
    if res.cpu_s is None and w.usage is not None:
        res.cpu_s = w.usage.cpu_s
    if status is None:  # the zygote died with the run: as if killed
        status = signal.SIGKILL
    classify(res, status, w.stop, "bwrap", limits, bool(oom), bool(hit_limit))
    if res.returncode == SETUP_FAILED and res.stderr.startswith(SETUP_PREFIX):
        res.setup_error = res.stderr.decode(errors="replace").strip()
    res.disk_exceeded = res.disk_exceeded or bool(disk_full)
    res.layers = layers
    res.missing_layers = [k for k in SECURITY_LAYERS if not layers.get(k)]
    return res


def _seccomp_pipe() -> int:
    """A pipe holding the run's seccomp program, read end numbered for passing: the zygote
    reads it once and loads it in every fork."""
    sc_r, sc_w = os.pipe()
    os.write(sc_w, run_program())
    os.close(sc_w)
    return high(sc_r)


def _spawn(cmd: list[str], ctl: int, sc: int) -> subprocess.Popen[bytes]:
    import subprocess

    # umask 022: the folders bwrap makes for mount points (/work above a venv) must let
    # each run's uid through, as they do where bwrap itself runs as that uid
    proc = _in_lasting_thread(lambda: subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, pass_fds=(ctl, sc), cwd="/",
        env={"PATH": "/usr/bin:/bin"}, start_new_session=True, umask=0o022))
    os.close(ctl)
    os.close(sc)
    return proc


def _hello(ours: socket.socket, proc: subprocess.Popen[bytes], zscratch: str,
           device: str) -> dict:
    """The zygote's first word, once it has imported its preload: or, where it did not
    start or touched CUDA, WarmUnavailable, with it gone."""
    import shutil

    ours.settimeout(START_TIMEOUT_S)
    try:
        hello = json.loads(ours.recv(1 << 16) or b"null")
    except (OSError, ValueError):
        hello = None
    touched = device == "cuda" and hello and hello.get("cuda_touched")
    if not hello or "ready" not in hello or touched:
        kill(proc.pid)
        proc.wait()
        shutil.rmtree(zscratch, ignore_errors=True)
        if touched:
            raise WarmUnavailable(f"the zygote touched CUDA before any fork ({touched}): "
                                  "CUDA runs stay cold")
        raise WarmUnavailable(f"the zygote did not start: {hello!r}")
    ours.settimeout(None)
    return hello


def _detached(paths: list[str]) -> dict[str, int]:
    """{path: a detached copy of its mount}, or WarmUnavailable (nothing made is left open)."""
    out: dict[str, int] = {}
    try:
        for path in paths:
            out[path] = detached_copy(path)
    except OSError as e:
        for fd in out.values():
            close(fd)
        raise WarmUnavailable(f"a writable folder cannot be handed to a fork: {e}") from e
    return out


INTERPRETER_FLAGS = {"-P", "-s", "-S", "-B", "-u", "-E"}


def _program(argv: list[str]) -> Program | None:
    """What the fork runs for ``argv`` (control.MAINS): ("runner", ARGS, "") for ``python
    [flags] -m judge_runner ARGS``, ("serve", ARGS, "") for ``-m judge_runner.proxy.serve
    ARGS``, ("code", ARGS, CODE) for ``python [flags] -c CODE ARGS``, None for anything else
    (it runs cold)."""
    if not argv or os.path.realpath(argv[0]) != os.path.realpath(sys.executable):
        return None
    i = 1
    while i < len(argv) and argv[i] in INTERPRETER_FLAGS:
        i += 1
    rest = argv[i:]
    if rest[:2] == ["-m", "judge_runner"]:
        return "runner", rest[2:], ""
    if rest[:2] == ["-m", "judge_runner.proxy.serve"]:  # an imported problem's submission side
        return "serve", rest[2:], ""
    if len(rest) >= 2 and rest[0] == "-c":
        return "code", rest[2:], rest[1]
    return None


def _status(gate: socket.socket) -> tuple[int | None, bool]:
    """(the fork's wait status as the zygote reaped it, whether it left its scratch
    filesystem full: the fork looks before the filesystem goes with its namespace)."""
    gate.settimeout(GATE_TIMEOUT_S)
    full = False
    try:
        while True:
            msg = gate.recv(1 << 12)
            if not msg:
                return None, full
            data = json.loads(msg)
            full = full or bool(data.get("disk_full"))
            if "status" in data:
                return int(data["status"]), full
    except (OSError, ValueError, TypeError):
        return None, full


def detached_copy(path: str) -> int:
    """A descriptor of a detached copy of the mount at ``path`` (or of the folder, bound):
    open_tree(2) with OPEN_TREE_CLONE, Linux 5.2. A fork attaches it in its own mount
    namespace (zygote._attach). Why not the zygote's view of the host's temporary folder, as
    for the read-only binds: a writable folder two runs share (proxied.py's shared tmp) is a
    tmpfs the host mounts per run, after the zygote started, and the host's mounts need not
    propagate into it (a private root, as in a container): the fork would write to the host's
    disk under it, past the tmpfs's cap. Raises OSError where the kernel lacks it."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(ctypes.c_long(NR_OPEN_TREE), ctypes.c_int(AT_FDCWD), os.fsencode(path),
                      ctypes.c_uint(OPEN_TREE_CLONE | os.O_CLOEXEC))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"open_tree: {os.strerror(err)}", path)
    return fd
