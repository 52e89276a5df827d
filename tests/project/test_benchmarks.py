"""Benchmarks are run by hand, so they rot (engine_throughput.py crashed for months on the
handbook's new BlockPool(num_blocks)). Each one runs here in its --quick mode (tiny sizes, one
repetition) and must finish and print its table: its header row and the dashes under it.
Never its figures: a benchmark's numbers are not a test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO

BENCH = REPO / "benchmarks"
# script -> (extra arguments, words of its table's header row)
QUICK = {
    "engine_throughput.py": ([], ["generator", "ms / batch", "new tokens/s"]),
    "reload_vs_recompute.py": ([], ["recompute us/tok", "reload us/tok"]),
    "tiered_bandwidth.py": ([], ["direction", "plain GB/s", "pool GB/s"]),
    # the cheapest bank problem and two of the proxy's kinds: the scripts' paths, not their
    # figures, are what is checked (143 and all five kinds took 49 CPU s of the suite's ~4,000)
    "grading_latency.py": (["141", "--parts", "grade"], ["measure", "path", "x bare"]),
    "grading_profile.py": ([], ["step", "seconds"]),
    "load.py": ([], ["mode", "graded", "per min", "mismatch"]),
    "page_start.py": ([], ["start", "source", "ready from navigation", "ready in worker"]),
    "proxy_grading.py": (["--problems", "ring-calls,async-pool"],
                         ["problem", "kind", "plain s", "graded s", "x plain", "req/s"]),
    "imported_warm.py": ([], ["problem", "cold s", "warm s", "warm / cold"]),
    "resident_view_cost.py": ([], ["path", "host files (before)", "image (after)"]),
}
# Benchmarks that drive a browser: skipped where it is missing, as the browser tests are.
NEEDS = {"page_start.py": Path("/usr/bin/chromium")}


def test_every_benchmark_has_a_quick_run_here():
    scripts = {p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(QUICK), "add the new benchmark to QUICK"


def _header_and_rule(out: str, words: list[str]) -> bool:
    lines = out.splitlines()
    for i, line in enumerate(lines[:-1]):
        rule = lines[i + 1].strip()
        if all(w in line for w in words) and rule and set(rule) <= {"-", " "}:
            return True
    return False


@pytest.mark.parametrize("script", sorted(QUICK))
def test_benchmark_runs_quickly_and_prints_its_table(script):
    extra, words = QUICK[script]
    if script in NEEDS and not NEEDS[script].exists():
        pytest.skip(f"{NEEDS[script]} is missing")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(BENCH / script), "--quick", *extra], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert _header_and_rule(proc.stdout, words), proc.stdout[-3000:]
