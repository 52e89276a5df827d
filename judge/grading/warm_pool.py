"""Warm zygotes for this process's suite runs: one per problem version, shared by every grading
thread (embedded workers, a remote worker's slots, `judge check`, `--mutate`).

    spawn = spawner(problem, device, run_sandboxed)   # launch.py: a zygote's fork, or cold

A zygote (judge/sandbox/forkserver.py, judge/runner/forkserver/zygote.py) is started on the first run of
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
from judge.sandbox import scratchfs
from judge.sandbox.forkserver import ForkServer, WarmSetupFailed, WarmUnavailable, warm_possible

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


def enabled() -> bool:
    f = _forced.get()
    if f is not None:
        return f
    env = settings().warm
    return _default[0] if env is None else env


def intended(device: str) -> bool:
    """Whether this process's runs on `device` are meant to fork from a zygote. A zygote has
    torch and pytest imported already, so a test that imports them costs a cold run seconds of
    CPU and a warm one nothing: the reference's times are kept per mode (reference_cache.py)."""
    if not enabled() or (device != "cpu" and not (device == "cuda" and settings().warm_cuda)):
        return False
    return warm_possible()[0]


def spawner(problem, device: str, cold):
    """A ``run_sandboxed``-shaped callable for each process of a run: a fork of the problem's
    zygote, or ``cold`` (the launcher's run_sandboxed) where this process cannot go warm (no
    zygote serves this run, or WarmUnavailable: nothing was handed over, so it runs cold in
    place). A fork that fails after the hand-over raises WarmSetupFailed: the whole attempt is
    made again cold (launch.attempt), its descriptors being gone."""
    if not enabled() or (device != "cpu" and not (device == "cuda" and settings().warm_cuda)):
        return cold
    server = None
    if intended(device):
        try:
            server = server_for(problem, device)
        except Exception as exc:  # noqa: BLE001 - a zygote that cannot start: the run is cold
            log.warning("no warm grader for %s (%s): grading cold", problem.name, exc)
    if server is None:
        _fell_back()
        return cold

    def spawn(**kw):
        try:
            res = server.run(**kw)
        except WarmUnavailable as exc:
            _fell_back()
            log.info("%s: cold run (%s)", problem.name, exc)
            return cold(**kw)
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
    s = start_server(problem.handbook_paths, problem.module, str(problem.id), device,
                     **_imported(problem))
    log.info("warm grader for %s: %s", problem.name, s.preloaded)
    return s


def _imported(problem) -> dict:
    """What an imported problem's zygote leaves out, since it forks both processes of each
    suite run (docs/IMPORTED_GRADING.md): its served modules, which the submission's process
    must import as the trusted side's stand-ins; and, where the problem has an install step,
    every handbook module, since each process calls install() before anything imports them
    (a module preloaded before it would hold the `triton` that install() replaces)."""
    from judge.grading import proxied

    if not proxied.is_proxied(problem):
        return {}
    served = tuple(proxied.served_modules(problem))
    if problem.config.handbook.install:
        return {"served": served, "skip": tuple(p.stem for p in problem.handbook_paths)}
    return {"served": served, "skip": served}


def start_server(handbook_paths=(), module: str | None = None, tag: str = "x",
                 device: str = "cpu", served: tuple[str, ...] = (),
                 skip: tuple[str, ...] = ()) -> ForkServer:
    """A zygote over a copy of these handbook modules and of the runner (neither is a
    secret: every run sees both), with what each run would import already imported: each
    module but ``module`` and ``skip``, and none that brings in one of ``served``."""
    from judge.grading.workdir import _IGNORE, RUNNER_SRC

    root = tempfile.mkdtemp(prefix=f"judge-warm{tag}-p{os.getpid()}-")
    _in_memory(root, [*handbook_paths, RUNNER_SRC])
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
    names = [n for n in names if n != module and n not in skip]
    env = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
           "PYTHONNOUSERSITE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "JUDGE_DEVICE": device,
           # a handbook module's `torch.cuda.is_available()` at import asks NVML, not the
           # driver: an initialized driver would leave every fork without CUDA
           "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
    try:
        s = ForkServer.start([(hb, f"{WARM_LIB}/handbook"), (rn, f"{WARM_LIB}/runner")],
                             names, env=env, lib_root=root, device=device, served=served)
    except BaseException:
        for mnt in scratchfs.mounted_under(root):
            scratchfs.unmount(mnt)
        shutil.rmtree(root, ignore_errors=True)
        raise
    return s


def _in_memory(root: str, sources) -> None:
    """The zygote's copies on a tmpfs of their own: every fork of it reads them, so a page of
    them the host had evicted would be a cold page one run can warm and the next can time
    (the page-cache channel, judge/sandbox/system_image.py). A folder on the host's disk where
    mounting is not allowed (not root)."""
    from judge.sandbox import accounts

    if not accounts.is_root():
        return
    paths = [os.path.join(d, n) for src in sources for d, _, names in os.walk(src)
             for n in names] + [str(src) for src in sources if os.path.isfile(src)]
    size, files = sum(os.path.getsize(p) for p in paths), len(paths) + 64
    try:
        scratchfs.mount(root, 2 * size + (8 << 20), 2 * files + 256, 0, 0)
    except OSError as exc:
        log.info("the warm grader's copies stay on disk: %s", exc)


def prewarm(problems, limit: int | None = None) -> threading.Thread | None:
    """Starts, in one background thread and one after the other, the zygotes of the first
    ``limit`` (MAX_SERVERS) CPU problems of ``problems``, so that the first submission of
    each forks instead of waiting for a torch import (`judge serve`'s embedded workers; a
    remote worker's WarmGrader.warm does it for its bank). Nothing where this process is cold
    or JUDGE_PREWARM=0 (each zygote then starts on its problem's first grading); a problem that
    cannot start its zygote is only logged."""
    if not enabled() or not settings().prewarm or not warm_possible()[0]:
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
