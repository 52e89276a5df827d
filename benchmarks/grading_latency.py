"""Grading latency: grade() on a problem's reference solution (full suite, warm reference
cache) against the bare cost of the same tests run unsandboxed in one pytest process.

    .venv/bin/python benchmarks/grading_latency.py [PROBLEM] [--repeat N] [--device cpu]

Prints the figures (the goal: grade / bare <= 1.5) and grade()'s per-phase times. No asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from judge import grade, load_problem  # noqa: E402
from judge.grading.reference_cache import ReferenceCache  # noqa: E402

PLUGIN = '''
import os
import pytest

@pytest.fixture
def observe():
    seen = []
    return lambda label, value: seen.append((label, value))

@pytest.fixture(scope="session")
def device():
    return os.environ.get("JUDGE_DEVICE", "cpu")
'''


def bare_run(problem, device: str) -> float:
    """Seconds for one unsandboxed `python -m pytest` over the public and hidden test files,
    with the reference solution importable under the submission's module name."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "bench_observe.py").write_text(PLUGIN)
        sub = tmp / "sub"
        sub.mkdir()
        (sub / f"{problem.module}.py").write_text(problem.reference_path.read_text())
        handbook = {str(p.parent) for p in problem.handbook_paths}
        env = dict(os.environ, JUDGE_DEVICE=device, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
                   OMP_NUM_THREADS="1", MALLOC_ARENA_MAX="2", PYTHONHASHSEED="0",
                   PYTHONDONTWRITEBYTECODE="1",
                   PYTHONPATH=os.pathsep.join([str(sub), str(tmp), *sorted(handbook)]))
        files = [str(f) for s in ("public", "hidden") for f in problem.test_files(s)]
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "bench_observe",
                               "-p", "no:cacheprovider", "-c", os.devnull,
                               "--rootdir", str(problem.path), *files],
                              cwd=tmp, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
        if proc.returncode != 0:
            print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
            raise SystemExit("the bare run failed")
        return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem", nargs="?", default="143")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()
    problem = load_problem(args.problem)
    source = problem.reference_path.read_text()
    cache = ReferenceCache()
    t = time.perf_counter()
    first = grade(problem, source, device=args.device, cache=cache)  # warms the cache
    print(f"problem {problem.name}: first grade {time.perf_counter() - t:.2f}s "
          f"(reference cached: {first.timings.get('reference_cached')}), "
          f"verdict {first.verdict}")
    device = first.provenance["device"]
    walls, reports = [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        reports.append(grade(problem, source, device=device, cache=cache))
        walls.append(time.perf_counter() - t)
    bares = [bare_run(problem, device) for _ in range(args.repeat)]
    g, b = statistics.median(walls), statistics.median(bares)
    print(f"grade() wall, warm cache (median of {args.repeat}): {g:.2f}s  "
          f"[{', '.join(f'{w:.2f}' for w in walls)}]")
    print(f"bare pytest, one process, unsandboxed (median):   {b:.2f}s  "
          f"[{', '.join(f'{w:.2f}' for w in bares)}]")
    print(f"ratio grade / bare: {g / b:.2f}  (goal <= 1.5)")
    last = reports[-1].timings
    print("per phase (last run):")
    for key in ("prepare_s", "reference_s", "public_s", "hidden_s", "compare_s", "total_s"):
        print(f"  {key:<12} {last.get(key)}")
    for suite, ph in last.get("phases", {}).items():
        print(f"  {suite:<7} process start {ph['start_s']}s, imports {ph['import_s']}s, "
              f"tests {ph['tests_s']}s")
    print(f"sandbox: {reports[-1].provenance.get('sandbox_layers', {}).get('mode')}, "
          f"missing layers: {reports[-1].provenance.get('missing_layers')}")


if __name__ == "__main__":
    main()
