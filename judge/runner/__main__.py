"""Entry point inside the sandbox:

    python -P -s -m judge_runner (--results-fd N | --results results.jsonl) --module lru \
        --submission /view/sub/lru.py --suite-dir /view/tests/public \
        [--limits limits.json] [--default-limit 60] [--import-limit 60] TARGET...

The judge passes a pipe (--results-fd): a file in the scratch folder could be written, or
written first, by the submission under test; a file is for running the runner by hand.

Limits are in CPU seconds (see plugin.py).

TARGETs are test files or node ids (``test_lru.py::test_get``) relative to --suite-dir.
Exit status: 0 when the run completed (whatever the tests did), 3 on a compile error,
124 on a timeout, 70 when the runner itself failed.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib
import json
import os
import platform
import signal
import sys
import threading
import time

from . import install_step, plugin
from .errors import describe_import_error
from .events import EventWriter, now
from .own_threads import runner_thread

EXIT_COMPILE_ERROR = 3
EXIT_TIMEOUT = 124
EXIT_RUNNER_ERROR = 70


def parse_args(argv):
    p = argparse.ArgumentParser(prog="judge_runner")
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("--results")
    out.add_argument("--results-fd", type=int)
    p.add_argument("--module", required=True)
    p.add_argument("--submission", required=True)
    p.add_argument("--suite-dir", required=True)
    p.add_argument("--limits")
    p.add_argument("--default-limit", type=float, default=60.0)
    p.add_argument("--import-limit", type=float, default=60.0)
    p.add_argument("--proxy", help="IN,OUT,CTLIN,CTLOUT[,SIN,SOUT]: the module is the "
                                   "submission's, in another process (imported problems, "
                                   "trusted.py; SIN,SOUT: the tests' other threads)")
    p.add_argument("--run-mode", action="store_true",
                   help="only test_example* (the first test when there is none)")
    p.add_argument("targets", nargs="+")
    return p.parse_args(argv)


def import_submission(args, writer: EventWriter) -> int:
    """Imports the student's module under a CPU time limit (as the tests have, see plugin):
    0, or the exit status to end with (after writing a compile_error or import_timeout
    event). An import that sleeps is left to the parent's wall-clock net."""
    done = threading.Event()
    cpu0 = plugin.cpu_now()
    deadline = cpu0 + args.import_limit + plugin.GRACE_S

    def watchdog():
        while not done.wait(0.05):
            if plugin.cpu_now() > deadline:
                writer.emit("import_timeout", wait=0.5, t=now(), limit_s=args.import_limit)
                os._exit(EXIT_TIMEOUT)

    runner_thread(threading.Thread(target=watchdog, daemon=True)).start()
    t0 = time.perf_counter()
    try:
        signal.setitimer(signal.ITIMER_PROF, args.import_limit)
        importlib.import_module(args.module)
    except plugin.JudgeTimeout:
        writer.emit("import_timeout", t=now(), limit_s=args.import_limit)
        return EXIT_TIMEOUT
    except BaseException as exc:  # anything at import time: the file does not import
        signal.setitimer(signal.ITIMER_PROF, 0)
        info = describe_import_error(exc, exc.__traceback__, args.submission)
        writer.emit("compile_error", t=now(), **info)
        return EXIT_COMPILE_ERROR
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        done.set()
    writer.emit("imported", t=now(), import_s=round(time.perf_counter() - t0, 6),
                cpu_s=round(plugin.cpu_now() - cpu0, 6))
    return 0


def connect_submission(args, writer: EventWriter) -> int:
    """The submission runs in its own sandbox; its module here is a proxy (trusted.py)."""
    from .proxy import served, shared_tmp, trusted
    from .proxy.capabilities import HANDBOOK_DIR_ENV, Guard

    shared_tmp.share()  # the submission's process writes in the test's temporary folders
    t0 = time.perf_counter()
    suite = os.path.abspath(args.suite_dir)
    # the tests' own modules: what the capability guard lets cross as the tests' objects
    guard = Guard(roots=(suite, os.environ.get(HANDBOOK_DIR_ENV, "")),
                  modules=(*served.served_names(), "checker", *install_step.names_from_env()))
    calibrate = _uses_time_limit(suite)
    error = trusted.guard(lambda: trusted.connect(args.proxy, args.module, plugin.event_loop(),
                                                  guard, calibrate))
    if error is not None:
        writer.emit("compile_error", t=now(), **error)
        return EXIT_COMPILE_ERROR
    writer.emit("imported", t=now(), import_s=round(time.perf_counter() - t0, 6), cpu_s=0.0)
    return 0


def _uses_time_limit(suite: str) -> bool:
    """Whether a test file of the suite names time_limit (its calibration is then made before
    the student's module is imported)."""
    for root, _, files in os.walk(suite):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(root, name), "rb") as f:
                    if b"time_limit" in f.read():
                        return True
    return False


def pytest_args(args) -> list[str]:
    suite = os.path.abspath(args.suite_dir)
    targets = [os.path.join(suite, t) for t in args.targets]
    return [
        "-c", os.devnull, "--rootdir", suite, "--confcutdir", suite,
        "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:stepwise",
        "-p", "no:pastebin", "-p", "no:junitxml", "-p", "no:doctest", "-p", "no:faulthandler",
        "-s", "-o", "python_functions=test_*", "-o", "python_classes=Test*",
        "-W", "ignore::pytest.PytestAssertRewriteWarning",
        *targets,
    ]


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    writer = EventWriter(args.results, fd=args.results_fd)
    try:
        faulthandler.enable(file=sys.stderr)
        writer.emit("start", t=now(), python=platform.python_version(), pid=os.getpid())
        S = plugin.S
        S.writer, S.submission = writer, os.path.abspath(args.submission)
        S.suite_dir = os.path.abspath(args.suite_dir)
        S.default_limit = args.default_limit
        if args.limits:
            with open(args.limits, encoding="utf-8") as f:
                S.limits = {str(k): float(v) for k, v in json.load(f).items()}
        plugin.start_watchdog()
        S.run_mode, S.proxied = args.run_mode, bool(args.proxy)
        install_step.run()  # `[handbook] install`: before the solution and the tests
        status = connect_submission(args, writer) if args.proxy else \
            import_submission(args, writer)
        if status:
            return status
        import pytest

        t0 = time.perf_counter()
        code = pytest.main(pytest_args(args), plugins=[plugin])
    except BaseException as exc:  # the runner's own fault
        writer.emit("runner_error", message=f"{type(exc).__name__}: {exc}")
        return EXIT_RUNNER_ERROR
    torch = sys.modules.get("torch")
    gpu = None
    if torch is not None and os.environ.get("JUDGE_DEVICE") == "cuda":
        try:
            gpu = torch.cuda.get_device_name(0)
        except Exception:
            gpu = None
    writer.emit("finished", t=now(), tests_s=round(time.perf_counter() - t0, 6),
                exit_code=int(code), torch=getattr(torch, "__version__", None), gpu_name=gpu)
    # Targets given as node ids (the fail-fast order, `_cheapest_first`) in a file that did not
    # collect cannot be found: pytest calls that a usage error (4). The collect_error already
    # written is the verdict (CE, as when the file is given whole), not the runner's fault.
    if int(code) == 4 and S.collect_errors:
        return 0
    if int(code) in (3, 4):  # pytest: internal error / usage error
        writer.emit("runner_error", message=f"pytest exited with status {int(code)}")
        return EXIT_RUNNER_ERROR
    return 0


if __name__ == "__main__":
    status = main()
    # Skip the interpreter's teardown (torch's can take a third of a second): everything the
    # parent reads is already written with os.write; flush what the test code printed.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(status)
