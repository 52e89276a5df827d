"""Warm zygotes for this process's suite runs: one per problem version, shared by every grading
thread (embedded workers, a remote worker's slots, `judge check`, `--mutate`).

    spawn = spawner(problem, device)   # in suite_run: None -> the cold path (run_sandboxed)

A zygote (judge/sandbox/forkserver.py, judge/runner/zygote.py) is started on the first run of
a problem version and replaced when it dies, after MAX_RUNS forks, and when the problem's
version changes (its handbook modules may have changed). At most MAX_SERVERS are kept, the
least recently used closed first. Where none can be made (no bubblewrap, not root, macOS)
every run is cold; CUDA runs too unless JUDGE_WARM_CUDA=1 (a zygote of their own that never
touches CUDA, each fork making its own context: forkserver.ForkServer.start). Each run's
`layers["mode"]` ("warm" or the cold mode) is what the report's provenance shows.

Warm by default in the processes that grade many files (`use_by_default()`: `judge serve`'s
embedded workers, `judge worker`, `judge check`, `--mutate`); a one-off grade() stays cold, a
zygote's start (a torch import) costing what one cold grading saves. JUDGE_WARM=1 or 0 decides
for any process; `forced(...)` for a test.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import shutil
import tempfile
import threading
from collections import OrderedDict

from judge.config import settings
from judge.sandbox.forkserver import ForkServer, WarmUnavailable, warm_possible

log = logging.getLogger("judge")
MAX_RUNS = 500
MAX_SERVERS = 4
WARM_LIB = "/.judge-warm"   # where a zygote sees its handbook and runner (not under /tmp)

_forced: contextvars.ContextVar[bool | None] = contextvars.ContextVar("judge_warm", default=None)
_lock = threading.Lock()
_servers: OrderedDict[tuple, ForkServer] = OrderedDict()
_starting: dict[tuple, threading.Lock] = {}
_refused: dict[tuple, str] = {}
_fallbacks = 0


@contextlib.contextmanager
def forced(on: bool):
    """Every suite run in this context warm (True: where possible) or cold (False)."""
    token = _forced.set(on)
    try:
        yield
    finally:
        _forced.reset(token)


_default = [False]


def use_by_default() -> None:
    """This process grades many files: its suite runs fork from warm zygotes unless
    JUDGE_WARM=0. (It was opt-in while two warm-only faults were open: a clone's venv under
    /tmp hidden by each fork's fresh /tmp, and the results pipe's fd number past the run's
    RLIMIT_NOFILE; both are fixed, docs/SANDBOX.md section 6.)"""
    _default[0] = True


class WarmSetupFailed(RuntimeError):
    """A fork failed before the command's first byte ran; its pass_fds are closed, as
    run_sandboxed closes them: the caller runs it cold with new ones (suite_run.py)."""


def enabled() -> bool:
    f = _forced.get()
    if f is not None:
        return f
    env = settings().warm
    return _default[0] if env is None else env


def spawner(problem, device: str):
    """A ``run_sandboxed``-shaped callable that runs warm and falls back to the cold path,
    or None where this run is cold anyway."""
    if not enabled() or (device != "cpu" and not (device == "cuda" and settings().warm_cuda)):
        return None
    server = None
    if warm_possible()[0]:
        try:
            server = server_for(problem, device)
        except Exception as exc:  # noqa: BLE001 - a zygote that cannot start: the run is cold
            log.warning("no warm grader for %s (%s): grading cold", problem.name, exc)
    if server is None:
        _fell_back()
        return None

    def spawn(**kw):
        from judge.sandbox import run_sandboxed

        try:
            res = server.run(**kw)
        except WarmUnavailable as exc:
            _fell_back()
            log.info("%s: cold run (%s)", problem.name, exc)
            return run_sandboxed(**kw)
        if res.setup_error:
            # The fork failed while it was being set up, before the submission's first byte ran
            # (a mount refused, say): the zygote is retired and the caller runs it again cold,
            # on descriptors of its own (these were closed, and their numbers may be another
            # thread's by now).
            log.warning("%s: warm fork setup failed (%s): run again cold, zygote replaced",
                        problem.name, res.setup_error)
            server.dead = True
            _fell_back()
            raise WarmSetupFailed(res.setup_error)
        return res
    return spawn


def _fell_back() -> None:
    global _fallbacks
    with _lock:
        _fallbacks += 1


def fallbacks() -> int:
    """How many runs meant to be warm ran cold (a test's check that warm means warm)."""
    return _fallbacks


def _key(problem, device: str = "cpu") -> tuple:
    return (str(getattr(problem, "path", problem.name)), problem.version, device)


def server_for(problem, device: str = "cpu") -> ForkServer | None:
    key = _key(problem, device)
    with _lock:
        if key in _refused:
            return None
        gate = _starting.setdefault(key, threading.Lock())
    with gate:  # one start per problem version, however many threads ask at once
        with _lock:
            s = _servers.get(key)
            if s is not None and (not s.alive() or s.runs >= MAX_RUNS):
                _servers.pop(key)
                s.close()
                s = None
            if s is not None:
                _servers.move_to_end(key)
                return s
        for old_key in [k for k in list(_servers)  # an older version
                        if k[0] == key[0] and k[2] == device]:
            _close(old_key)
        try:
            s = _start(problem, device)
        except WarmUnavailable as exc:
            with _lock:
                _refused[key] = str(exc)
            log.warning("no warm grader for %s: %s", problem.name, exc)
            return None
        with _lock:
            _servers[key] = s
            while len(_servers) > MAX_SERVERS:
                _servers.popitem(last=False)[1].close()
        return s


def _start(problem, device: str = "cpu") -> ForkServer:
    s = start_server(problem.handbook_paths, problem.module, str(problem.id), device)
    log.info("warm grader for %s: %s", problem.name, s.preloaded)
    return s


def start_server(handbook_paths=(), module: str | None = None, tag: str = "x",
                 device: str = "cpu") -> ForkServer:
    """A zygote over a copy of these handbook modules and of the runner (neither is a
    secret: every run sees both), with what each run would import already imported."""
    from judge.grading.workdir import _IGNORE, RUNNER_SRC

    root = tempfile.mkdtemp(prefix=f"judge-warm{tag}-p{os.getpid()}-")
    os.chmod(root, 0o755)
    hb, rn = os.path.join(root, "handbook"), os.path.join(root, "runner")
    os.makedirs(hb)
    names = []
    for src in handbook_paths:
        if src.is_dir():
            shutil.copytree(src, os.path.join(hb, src.name), ignore=_IGNORE)
            names.append(src.name)
        elif src.suffix == ".py":
            shutil.copy2(src, os.path.join(hb, src.name))
            names.append(src.stem)
    shutil.copytree(RUNNER_SRC, os.path.join(rn, "judge_runner"), ignore=_IGNORE)
    for d, dirs, files in os.walk(root):
        for x in dirs:
            os.chmod(os.path.join(d, x), 0o755)
        for x in files:
            os.chmod(os.path.join(d, x), 0o644)
    names = [n for n in names if n != module]
    env = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONNOUSERSITE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "JUDGE_DEVICE": device,
           # a handbook module's `torch.cuda.is_available()` at import asks NVML, not the
           # driver: an initialized driver would leave every fork without CUDA
           "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
    try:
        s = ForkServer.start([(hb, f"{WARM_LIB}/handbook"), (rn, f"{WARM_LIB}/runner")],
                             names, env=env, lib_root=root, device=device)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return s


def prewarm(problems, limit: int | None = None) -> threading.Thread | None:
    """Starts, in one background thread and one after the other, the zygotes of the first
    ``limit`` (MAX_SERVERS) CPU problems of ``problems``, so that the first submission of
    each forks instead of waiting for a torch import (`judge serve`'s embedded workers; a
    remote worker's WarmGrader.warm does it for its bank). Nothing where this process is cold;
    a problem that cannot start its zygote is only logged."""
    if not enabled() or not warm_possible()[0]:
        return None
    chosen = [p for p in problems if "cuda" not in p.requires][:limit or MAX_SERVERS]

    def run():
        for p in chosen:
            try:
                server_for(p)
            except Exception as exc:  # noqa: BLE001 - its first grading will say it again
                log.warning("no warm grader for %s at start-up (%s)", p.name, exc)
    t = threading.Thread(target=run, name="judge-prewarm", daemon=True)
    t.start()
    return t


def _close(key) -> None:
    with _lock:
        s = _servers.pop(key, None)
    if s is not None:
        s.close()


def close_all() -> None:
    with _lock:
        items = list(_servers.values())
        _servers.clear()
        _refused.clear()
    for s in items:
        s.close()
