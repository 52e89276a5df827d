"""The reference's observations of a problem's public tests, which the browser compares against.

Preferred source: the grading core — `judge.public_expectations(problem)` if it offers one, else
its reference cache (`judge.reference_cache.get_reference(problem, ["public"], "cpu")`, the same
sandboxed reference run that grading uses). Where the core is missing or fails, the same
observations are recorded here by running the public tests against the reference solution with
the page's own runner (web/pyrunner/kvp_runner.py) in a child CPython process. The reference is trusted code; the
students' code never runs on the server outside the grading core's sandbox.

Format: {"public/test_x.py::test_y": [[label, value], ...], ...}
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from judge.problem import Problem as ProblemInfo
from .settings import REPO_ROOT, Settings  # noqa: F401

log = logging.getLogger(__name__)


def normalize(raw) -> dict[str, list]:
    """Accept {test: [[label, value]...]} or {test: [{"label":..., "value":...}...]}."""
    out: dict[str, list] = {}
    for name, obs in dict(raw).items():
        rows = []
        for o in obs:
            if isinstance(o, dict):
                rows.append([str(o.get("label")), o.get("value")])
            else:
                label, value = o
                rows.append([str(label), value])
        out[str(name)] = rows
    return out


class Expectations:
    def __init__(self, settings: Settings):
        self.settings = settings
        self._mem: dict[str, dict] = {}
        self._errors: dict[str, str] = {}
        self._failed_at: dict[str, float] = {}
        self._lock = threading.Lock()

    def error(self, problem: ProblemInfo) -> str | None:
        return self._errors.get(problem.id)

    def get(self, problem: ProblemInfo) -> dict | None:
        """The expectations, or None (the page then checks assertions only and says so)."""
        version = problem.version
        key = f"{problem.id}-{version[:16]}"
        with self._lock:
            if key in self._mem:
                return self._mem[key]
            if time.monotonic() - self._failed_at.get(key, -1e9) < 60:
                return None  # failed a moment ago: do not block every page view on a retry
            try:
                exp = self._from_judge(problem)
                if exp is None:
                    exp = self._from_disk_or_run(problem, key)
                self._mem[key] = exp
                self._errors.pop(problem.id, None)
                return exp
            except Exception as exc:
                log.warning("no reference observations for problem %s: %s", problem.id, exc)
                self._errors[problem.id] = str(exc)[-2000:]
                self._failed_at[key] = time.monotonic()
                return None

    def _from_judge(self, problem: ProblemInfo) -> dict | None:
        try:
            import judge
            jp = judge.load_problem(problem)
        except Exception:
            return None
        fn = getattr(judge, "public_expectations", None)
        if fn is not None:
            return normalize(fn(jp))
        try:
            from judge.reference_cache import get_reference
            ref, _ = get_reference(jp, ["public"], "cpu")
        except Exception as exc:  # fall back to our own recording, and say why in the log
            log.warning("problem %s: the judge's reference run failed (%s); recording the "
                        "public observations here", problem.id, exc)
            return None
        return normalize({t["name"]: t.get("observations") or []
                          for t in ref["public"]["tests"]})

    def _from_disk_or_run(self, problem: ProblemInfo, key: str) -> dict:
        cache = self.settings.cache_dir / f"expectations-{key}.json"
        if cache.exists():
            return json.loads(cache.read_text())
        exp = record_reference(problem, self.settings)
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        tmp.write_text(json.dumps(exp))
        os.replace(tmp, cache)
        return exp


def reference_source(problem: ProblemInfo, settings: Settings) -> str:
    if problem.reference_path.is_file():
        return problem.reference_path.read_text(encoding="utf-8")
    raise FileNotFoundError(f"reference solution {problem.reference_path} not found")


def run_runner_child(spec: dict, timeout_s: float) -> dict:
    """Run web/pyrunner/kvp_runner.py in a child CPython with `spec`; its JSON result."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    env.setdefault("OMP_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory(prefix="kvp-ref-") as tmp:
        spec = dict(spec, workdir=os.path.join(tmp, "w"))
        proc = subprocess.run([sys.executable, "-m", "web.pyrunner.kvp_runner"],
                              input=json.dumps(spec), capture_output=True, text=True,
                              timeout=timeout_s, cwd=tmp, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"runner exited with {proc.returncode}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def record_reference(problem: ProblemInfo, settings: Settings, files: dict | None = None) -> dict:
    """Run the public tests (or `files`) against the reference; its observations per test."""
    spec = {
        "module": problem.module,
        "source": reference_source(problem, settings),
        "tests": files if files is not None else problem.public_files(),
        "handbook": problem.handbook_sources(),
        "expected": None,
    }
    res = run_runner_child(spec, timeout_s=float(problem.limits.wall_s) + 60)
    bad = [t for t in res["tests"] if t["verdict"] not in ("AC", "skipped")]
    if res.get("compile_error") or bad:
        what = res.get("compile_error") or bad[0]
        raise RuntimeError(f"the reference does not pass its own public tests: {what}")
    return res["observations"]
