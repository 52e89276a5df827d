"""The pytest plugin loaded inside the sandbox: the `observe` and `device` fixtures, per-test
time limits, and one `test_started` / `observation` / `test_finished` line per event.

Time limits are CPU seconds of this process, so a busy host does not change them: a profiling
timer (ITIMER_PROF) raises JudgeTimeout in the test at its limit, and a watchdog thread ends
the process when a test swallowed that and keeps computing. These are the polite way to stop
a test (the next one still runs); the parent enforces the same limits on the whole process
tree from its own measurements, and stops a test that waits instead of computing.

The page's Run loads this plugin too (judge/browser/page_run.py), in Pyodide: there is no `resource`
module and no profiling timer, and the page stops a run that takes too long from JavaScript.
The timers run only where `start_watchdog` installed them (the sandbox's __main__).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import signal
import threading
import time

import pytest

try:
    import resource
except ImportError:  # Pyodide
    # mypy's idiom for an optional module: the name is the module or None, checked where used
    resource = None  # type: ignore[assignment]

from .errors import JudgeTimeout, describe
from .events import EventWriter, check_label, now, to_json_data
from .own_threads import runner_thread

GRACE_S = 1.0  # CPU seconds after the soft timeout before the watchdog ends the process


class Session:
    """What the plugin needs to know; set up by __main__ before pytest starts."""

    writer: EventWriter
    submission: str
    suite_dir: str
    limits: dict[str, float] = {}
    default_limit: float = 60.0
    current: str | None = None
    started_at: float = 0.0
    cpu_at_start: float = 0.0
    deadline: float | None = None  # for the watchdog (cpu_now()), None when no test runs
    observer: Observer | None = None  # the running test's, shared by `observe` and `record`
    timers: bool = False  # per-test CPU timers armed (start_watchdog)
    run_mode: bool = False  # the handbook's "run": test_example* only, else the first test
    proxied: bool = False  # the submission is in another process (judge_runner.proxy.trusted)
    loop: asyncio.AbstractEventLoop | None = None  # every async test runs on this one loop
    collect_errors: int = 0  # test files that did not collect (collect_error events written)
    count = 0


S = Session()


def test_name(item) -> str:
    rel = os.path.relpath(str(item.path), S.suite_dir).replace(os.sep, "/")
    rest = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    return f"{rel}::{rest}"


def limit_for(name: str) -> float:
    if name in S.limits:
        return S.limits[name]
    base = name.split("[", 1)[0]
    return S.limits.get(base, S.default_limit)


# ---- fixtures -----------------------------------------------------------------------------

class Observer:
    def __init__(self, name: str):
        self._name = name
        self._i = 0

    def __call__(self, label, value) -> None:
        label = check_label(label)
        data = to_json_data(value)
        S.writer.emit("observation", test=self._name, i=self._i, label=label, value=data)
        self._i += 1


def current_observer(name: str) -> Observer:
    if S.observer is None or S.observer._name != name:
        S.observer = Observer(name)
    return S.observer


def record(label, value) -> None:
    """An observation of the running test from code that has no `observe` fixture (the handbook
    helpers in `checker`, which imported assertion-style tests call); outside a test, nothing."""
    if S.current is not None:
        current_observer(S.current)(label, value)


@pytest.fixture
def observe(request):
    """observe(label, value): record what the code under test did; value must be JSON data."""
    return current_observer(test_name(request.node))


@pytest.fixture(scope="session")
def device():
    """The device the judge runs on: "cpu" or "cuda"."""
    return os.environ.get("JUDGE_DEVICE", "cpu")


# ---- timers -------------------------------------------------------------------------------

def cpu_now() -> float:
    """CPU seconds of this process (every thread) and of the children it has waited for; in a
    proxied run less what serving the submission's requests cost (proxy/serving.py): that is not
    the submission's code's, and the grader does not charge it either."""
    served = _served_cpu() if S.proxied else 0.0
    if resource is None:
        return time.process_time() - served
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime - served


def _served_cpu() -> float:
    from .proxy import trusted
    return trusted.served_cpu()


def _serving_idle() -> None:
    from .proxy import trusted
    trusted.serving_idle()


def _on_timer(signum, frame):
    limit = limit_for(S.current or "")
    if S.proxied and S.current is not None:
        # ITIMER_PROF counts all of this process's CPU, serving included: armed again for
        # what is left of the limit in the CPU the test is charged
        left = limit - (cpu_now() - S.cpu_at_start)
        if left > 0.001:
            signal.setitimer(signal.ITIMER_PROF, left)
            return
    raise JudgeTimeout(f"the test used more CPU time than its limit ({limit}s)")


def _watchdog() -> None:
    while True:
        time.sleep(0.05)
        deadline, name = S.deadline, S.current
        if deadline is not None and name is not None and cpu_now() > deadline:
            S.writer.emit("test_finished", wait=0.5, test=name, outcome="timeout", phase="call",
                          kind="timeout", exc_type="JudgeTimeout", message="time limit exceeded",
                          line=None, where=None, traceback="",
                          duration_s=round(now() - S.started_at, 6),
                          cpu_s=round(cpu_now() - S.cpu_at_start, 6))
            os._exit(124)


def start_watchdog() -> None:
    signal.signal(signal.SIGPROF, _on_timer)
    S.timers = True
    runner_thread(threading.Thread(target=_watchdog, name="judge-watchdog", daemon=True)).start()


def arm(limit: float) -> None:
    if not S.timers:
        return
    S.deadline = cpu_now() + limit + GRACE_S
    signal.setitimer(signal.ITIMER_PROF, limit)


def disarm() -> None:
    if not S.timers:
        return
    signal.setitimer(signal.ITIMER_PROF, 0)
    S.deadline = None


# ---- the handbook's harness: async tests, Skip, run mode -----------------------------------

def event_loop() -> asyncio.AbstractEventLoop:
    """One loop for the whole run, as the handbook's runner awaits every test inside one
    `asyncio.run`: state a test leaves on the loop (tasks, the proxy's reader) stays there."""
    if S.loop is None:
        S.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(S.loop)
    return S.loop


def _is_skip(exc: BaseException) -> bool:
    # by name, as the handbook's runner does: a problem may ship its own `checker`
    return isinstance(exc, Exception) and type(exc).__name__ == "Skip"


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    fn = pyfuncitem.obj
    args = {a: pyfuncitem.funcargs[a] for a in pyfuncitem._fixtureinfo.argnames}
    try:
        ret = fn(**args)
        if inspect.isawaitable(ret):
            event_loop().run_until_complete(ret)
    except Exception as exc:
        if _is_skip(exc):
            pytest.skip(str(exc))
        raise
    return True


def pytest_collection_modifyitems(session, config, items):
    if S.run_mode and items:
        examples = [i for i in items if i.name.startswith("test_example")]
        keep = examples or items[:1]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep


# ---- hooks --------------------------------------------------------------------------------

def pytest_collection_finish(session):
    S.writer.emit("collected", tests=[test_name(i) for i in session.items])


def pytest_exception_interact(node, call, report):
    if isinstance(node, pytest.Item) or call.excinfo is None:
        return
    info = describe(call.excinfo.value, call.excinfo.tb, S.submission, S.suite_dir)
    path = getattr(node, "path", None)
    rel = os.path.relpath(str(path), S.suite_dir) if path else str(node.nodeid)
    S.collect_errors += 1
    S.writer.emit("collect_error", file=rel.replace(os.sep, "/"), **info)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    state = item.stash.setdefault(_STATE, {"failure": None, "skipped": False})
    if report.skipped and call.when in ("setup", "call"):
        state["skipped"] = True
    elif report.failed and state["failure"] is None and call.excinfo is not None:
        info = describe(call.excinfo.value, call.excinfo.tb, S.submission, S.suite_dir)
        info["phase"] = call.when
        if S.run_mode or S.proxied:
            # the handbook's rule: an AssertionError is a wrong answer, any other exception
            # a runtime error (the submission's frames are in another process here)
            if info.get("kind") not in ("timeout", "memory", "assertion"):
                info["kind"] = "student"
        state["failure"] = info
    return report


_STATE = pytest.StashKey[dict]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    name = test_name(item)
    limit = limit_for(name)
    if S.proxied:
        _serving_idle()  # (a JudgeTimeout raised while serving the last test's request)
    S.current, S.started_at, S.cpu_at_start = name, now(), cpu_now()
    S.writer.emit("test_started", test=name, t=S.started_at, limit_s=limit)
    arm(limit)
    try:
        return (yield)
    finally:
        disarm()
        duration = now() - S.started_at
        cpu = round(cpu_now() - S.cpu_at_start, 6)
        state = item.stash.get(_STATE, {"failure": None, "skipped": False})
        failure = state["failure"]
        if failure is not None:
            outcome = {"timeout": "timeout", "memory": "memory"}.get(
                failure["kind"], "failed" if failure["phase"] == "call" else "error")
            S.writer.emit("test_finished", test=name, outcome=outcome,
                          duration_s=round(duration, 6), cpu_s=cpu, **failure)
        else:
            S.writer.emit("test_finished", test=name,
                          outcome="skipped" if state["skipped"] else "passed",
                          duration_s=round(duration, 6), cpu_s=cpu)
        S.current = None
        S.count += 1
