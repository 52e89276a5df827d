"""Running one suite of one module (a submission or the reference) in a sandboxed child, and
watching its results file while it runs."""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .results import ChildLog, read_capped
from .view import View

from .sandbox import Limits, run_sandboxed

RESULTS = "results.jsonl"
POLL_S = 0.05


@dataclass
class SuiteRun:
    suite: str
    log: ChildLog
    spawn_t: float
    wall_s: float = 0.0
    returncode: int | None = None
    signal: int | None = None
    timed_out: bool = False
    memory_exceeded: bool = False
    output_exceeded: bool = False
    stdout: bytes = b""
    stderr: bytes = b""
    layers: dict = field(default_factory=dict)
    missing_layers: list = field(default_factory=list)
    sandbox_error: str | None = None    # run_sandboxed itself failed (the judge's fault)

    @property
    def died(self) -> bool:
        """The child ended abnormally (killed, crashed, limits, non-zero status)."""
        return bool(self.timed_out or self.memory_exceeded or self.output_exceeded
                    or self.signal or (self.returncode not in (0, None)))

    @property
    def start_s(self) -> float | None:
        """From asking for the child to the runner's first line (interpreter + sandbox start)."""
        return None if self.log.started_t is None else max(0.0, self.log.started_t - self.spawn_t)

    def output_tail(self, limit: int = 2000) -> str:
        text = (self.stdout + self.stderr).decode("utf-8", "replace")
        return text[-limit:]


def child_env(problem, view: View, sub_dir: Path, device: str) -> dict[str, str]:
    path = os.pathsep.join([str(sub_dir), str(view.handbook), str(view.runner_parent)])
    env = {
        "PYTHONPATH": path, "JUDGE_DEVICE": device, "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PYTHONNOUSERSITE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "PATH": "/usr/local/bin:/usr/bin:/bin",
    }
    # A GPU worker pinned to one GPU (one worker per GPU) pins its children to the same one.
    if device == "cuda" and os.environ.get("CUDA_VISIBLE_DEVICES"):
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    return env


def run_suite(problem, view: View, *, run: str, suite: str, submission: Path,
              targets: list[str], test_limits: dict[str, float], default_limit: float,
              import_limit: float, device: str,
              on_events: Callable[[list[dict]], None] | None = None,
              log: ChildLog | None = None) -> SuiteRun:
    """Runs `targets` (files or node ids in the suite folder) against `submission`."""
    lim = problem.limits
    conf, scratch = view.run_dirs(run, test_limits)
    suite_dir = view.tests[suite]
    argv = [sys.executable, "-P", "-s", "-m", "judge_runner",
            "--results", RESULTS, "--module", problem.module, "--submission", str(submission),
            "--suite-dir", str(suite_dir), "--limits", str(conf / "limits.json"),
            "--default-limit", f"{default_limit:.3f}", "--import-limit", f"{import_limit:.3f}",
            *targets]
    binds = [(p, p) for p in (view.handbook, view.runner_parent, submission.parent,
                              suite_dir, conf)]
    limits = Limits(wall_s=lim.wall_s, cpu_s=lim.cpu_s, memory_mb=lim.memory_mb,
                    processes=64, file_size_mb=64, open_files=256,
                    output_bytes=lim.output_kb * 1024)
    log = log if log is not None else ChildLog()
    out = SuiteRun(suite=suite, log=log, spawn_t=time.time())
    stop = threading.Event()
    offset = [0]

    def pump() -> None:
        data = read_capped(scratch / RESULTS, offset[0])
        offset[0] += len(data)
        events = log.feed(data) if data else []
        if events and on_events is not None:
            on_events(events)

    def watch() -> None:
        while not stop.wait(POLL_S):
            pump()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        res = run_sandboxed(argv=[str(a) for a in argv],
                            ro_binds=[(str(a), str(b)) for a, b in binds],
                            scratch=str(scratch), env=child_env(problem, view,
                                                                submission.parent, device),
                            limits=limits, device=device)
    except Exception as exc:  # the sandbox itself failed: the judge's fault
        out.sandbox_error = f"{type(exc).__name__}: {exc}"
        return out
    finally:
        stop.set()
        watcher.join()
        pump()
        out.wall_s = time.time() - out.spawn_t
    if getattr(res, "setup_error", None):
        out.sandbox_error = f"sandbox setup failed: {res.setup_error}"
    rc = res.returncode
    out.returncode = rc if rc is None or rc >= 0 else None
    out.signal = res.signal or (-rc if rc is not None and rc < 0 else None)
    out.timed_out, out.memory_exceeded = bool(res.timed_out), bool(res.memory_exceeded)
    out.output_exceeded = bool(res.output_exceeded)
    out.stdout, out.stderr = bytes(res.stdout or b""), bytes(res.stderr or b"")
    out.wall_s = float(getattr(res, "wall_s", out.wall_s) or out.wall_s)
    out.layers = dict(getattr(res, "layers", {}) or {})
    out.missing_layers = list(getattr(res, "missing_layers", []) or [])
    return out
