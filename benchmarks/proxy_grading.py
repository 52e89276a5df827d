"""Grading imported problems through the call proxy: what a verdict costs against one plain
pytest process over the same tests, in one run, and how many proxy requests a second it made.

The problems are fixtures written for this benchmark in the handbook's format
(tests/fixtures/handbook_bench/practice/problems/bench/, with a one-file GPU simulator as a
runtime module in its runtime/benchsim.py), imported into a temporary bank, one per
call pattern that costs the proxy the most:

    ring-calls   call-heavy   50,000 calls of the student's methods in a loop
    sim-scale    gpusim-like  a served simulator calls the student's kernel back per simulated
                              thread (2,048), whose every `t.` read and `x[i]` is a request
    tiny-mlp     torch        200 forwards of a small nn.Module over (8, 64) tensors
    gen-window   generator    the tests pass generators (20,000 items) the student iterates
    async-pool   async        async tests hand over coroutine factories (300 coroutines)

For each problem and grading path (`--paths cold,warm`: a fresh sandboxed interpreter per
process, or forks of warm zygotes, docs/SANDBOX.md section 6; the path actually taken is shown):

- graded s: the median wall time of `judge.grade` of the reference over the whole suite (its
  reference cache and zygotes warmed by one grading first, not counted);
- plain s: the median wall time of one plain `python -m pytest` process over the same test
  files, the reference importable as `solution`, the repository's reference/checker.py and the
  runtime module on the path, and a 10-line plugin that awaits async tests on one loop as the
  handbook's runner does;
- x plain: graded / plain (the issue's goal: median at most 1.0x, none above 3x);
- requests: the requests both processes sent each other (`Endpoint.calls` of each side), counted
  in one more cold grading whose two processes are started through a wrapper that reports the
  count at their end (`-c` in place of `-m judge_runner`, a benchmark-only patch of the
  launcher's `run_sandboxed`); req/s: requests / graded s.

    .venv/bin/python benchmarks/proxy_grading.py [--reps N] [--paths cold,warm]
        [--problems ring-calls,sim-scale,...] [--quick]

--quick: the public tests only (the examples), one grading, the cold path: the script still
works (tests/project/test_benchmarks.py runs it); its figures mean nothing. Prints a table; no
asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]

from _common import fmt, print_table, warn_if_busy  # noqa: E402

from judge import grade  # noqa: E402
from judge.authoring.importer import import_problems  # noqa: E402
from judge.grading.reference_cache import ReferenceCache  # noqa: E402

BOOK = REPO / "tests" / "fixtures" / "handbook_bench" / "practice" / "problems" / "bench"
KINDS = {"ring-calls": "call-heavy", "sim-scale": "gpusim-like", "tiny-mlp": "torch",
         "gen-window": "generator", "async-pool": "async"}

# The handbook's harness for the plain run: async tests awaited on one loop for the whole run
# (judge/runner/plugin.py does the same; plain pytest would skip them).
HARNESS = '''
import asyncio, inspect, pytest
LOOP = []

@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    ret = pyfuncitem.obj(**{a: pyfuncitem.funcargs[a] for a in pyfuncitem._fixtureinfo.argnames})
    if inspect.isawaitable(ret):
        LOOP or LOOP.append(asyncio.new_event_loop())
        LOOP[0].run_until_complete(ret)
    return True
'''

# What each process of the counting grading runs instead of `-m judge_runner[.serve]`: the real
# entry point, then its endpoints' request counts on stderr (the sandbox keeps its stderr).
MARK = b"BENCH-REQUESTS "
TRUSTED = '''
import os, sys
import judge_runner.__main__ as runner
from judge_runner.proxy import trusted
status = runner.main(sys.argv[1:])
os.write(2, b"\\nBENCH-REQUESTS %d\\n" % trusted.calls())
os._exit(status)
'''
SUBMISSION = '''
import os, sys
from judge_runner.proxy import endpoint
made, init = [], endpoint.Endpoint.__init__
def record(self, *a, **k):
    init(self, *a, **k)
    made.append(self)
endpoint.Endpoint.__init__ = record
import judge_runner.proxy.serve as serve
status = serve.main(sys.argv[1:])
os.write(2, b"\\nBENCH-REQUESTS %d\\n" % sum(e.calls for e in made))
os._exit(status)
'''


def import_bank(tmp: Path, slugs: list[str]) -> dict:
    """{slug: Problem} of the fixtures, imported (unchecked) into a bank under `tmp`."""
    from judge.problem import load_problem

    res = import_problems([BOOK / s for s in slugs], tmp / "problems")
    if res.refused:
        raise SystemExit(f"the fixtures did not import: {res.refused}")
    return {i.key.split("/")[1]: load_problem(str(i.folder)) for i in res.imported}


def plain_run(problem, suites: list[str]) -> float:
    """Seconds for one unsandboxed pytest process over the suites' test files."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "bench_harness.py").write_text(HARNESS)
        sub = tmp / "sub"
        sub.mkdir()
        (sub / f"{problem.module}.py").write_text(problem.reference_path.read_text())
        runtime = sorted({str(p.parent) for p in problem.handbook_paths})
        env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", OMP_NUM_THREADS="1",
                   MALLOC_ARENA_MAX="2", PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1",
                   PYTHONPATH=os.pathsep.join([str(sub), str(tmp), str(REPO / "reference"),
                                               *runtime]))
        files = [str(f) for s in suites for f in problem.test_files(s)]
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "bench_harness",
                               "-p", "no:cacheprovider", "-c", os.devnull,
                               "--rootdir", str(problem.path), *files],
                              cwd=tmp, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"the plain run of {problem.name} failed")
    return wall


def graded(problem, suite: str, path: str, reps: int, warm_up: bool) -> dict:
    """The median wall time of grade() of the reference on `path`, and what it gave."""
    from judge.grading import warm_pool

    source, cache = problem.reference_path.read_text(), ReferenceCache()
    walls, report = [], None
    with warm_pool.forced(path == "warm"):
        if warm_up:  # the reference cache and the problem's zygotes: once per problem
            grade(problem, source, suite=suite, device="cpu", cache=cache)
        for _ in range(reps):
            t = time.perf_counter()
            report = grade(problem, source, suite=suite, device="cpu", cache=cache)
            walls.append(time.perf_counter() - t)
    warm_pool.close_all()
    return {"s": statistics.median(walls), "verdict": str(report.verdict),
            "taken": report.provenance.get("sandbox_layers", {}).get("grader_path", "cold")}


@contextlib.contextmanager
def counting(counts: list):
    """Every cold sandboxed start of a runner process goes through the counting wrappers;
    each process's count is appended to `counts` (None: it ended without saying it)."""
    from judge.grading import launch

    real = launch.run_sandboxed

    def spawn(argv, *args, **kw):
        argv = list(argv)
        for i in range(len(argv) - 1):
            if argv[i] == "-m" and argv[i + 1] in ("judge_runner", "judge_runner.proxy.serve"):
                code = TRUSTED if argv[i + 1] == "judge_runner" else SUBMISSION
                argv[i:i + 2] = ["-c", code]
                break
        res = real(argv, *args, **kw)
        found = re.findall(rb"BENCH-REQUESTS (\d+)", res.stderr or b"")
        counts.append(int(found[-1]) if found else None)
        return res

    launch.run_sandboxed = spawn
    try:
        yield
    finally:
        launch.run_sandboxed = real


def requests_made(problem, suite: str) -> int | None:
    """The requests of one cold grading of the reference (cache already warm), both ways."""
    from judge.grading import warm_pool

    counts: list = []
    with warm_pool.forced(False), counting(counts):
        grade(problem, problem.reference_path.read_text(), suite=suite, device="cpu")
    return None if not counts or None in counts else sum(counts)


def measure(problem, slug: str, paths: list[str], args) -> list[dict]:
    """One row per path: the plain run, the grading and the requests of one more grading."""
    suite = "public" if args.quick else "all"
    suites = ["public"] if args.quick else ["public", "hidden"]
    plain = statistics.median(plain_run(problem, suites) for _ in range(args.reps))
    rows = [{"slug": slug, "path": path, "plain": plain,
             **graded(problem, suite, path, args.reps, warm_up=not args.quick)}
            for path in paths]
    n = requests_made(problem, suite)
    return [dict(r, requests=n) for r in rows]


def round_trip_floor(n: int = 5000) -> tuple[float, float, float]:
    """(us) a 40-byte ping-pong between two processes over two pipes, blocking reads; the same
    waiting in select() as the proxy's blocking side does; a plain method call in one process:
    what no proxy over pipes can go below, against what one process pays."""
    out = []
    for wait in (False, True):
        a_r, a_w = os.pipe()
        b_r, b_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(a_w)
            os.close(b_r)
            while True:
                if wait:
                    select.select([a_r], [], [])
                data = os.read(a_r, 64)
                if not data:
                    os._exit(0)
                os.write(b_w, data)
        os.close(a_r)
        os.close(b_w)
        t = time.perf_counter()
        for _ in range(n):
            os.write(a_w, b"x" * 40)
            if wait:
                select.select([b_r], [], [])
            os.read(b_r, 64)
        out.append((time.perf_counter() - t) / n * 1e6)
        os.close(a_w)
        os.waitpid(pid, 0)
        os.close(b_r)

    class Ring:
        def push(self, x):
            return None

    r, t = Ring(), time.perf_counter()
    for i in range(n * 20):
        r.push(i)
    return out[0], out[1], (time.perf_counter() - t) / (n * 20) * 1e6


def _cells(r: dict) -> list:
    n = r["requests"]
    return [r["slug"], KINDS[r["slug"]], f"{r['path']} ({r['taken']})", r["verdict"],
            fmt(r["plain"]), fmt(r["s"]), f"{r['s'] / r['plain']:.2f}",
            "?" if n is None else f"{n:,}", "?" if n is None else f"{n / r['s']:,.0f}"]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="the examples only, one grading, cold: checks that the script runs")
    p.add_argument("--reps", type=int, default=3, help="timed runs of each; the median is shown")
    p.add_argument("--paths", default="cold,warm", help="grading paths: cold, warm or both")
    p.add_argument("--problems", default=",".join(KINDS), help="fixtures (slugs), in order")
    args = p.parse_args(argv)
    if args.quick:
        args.reps, args.paths = 1, "cold"
    warn_if_busy()
    slugs, paths = args.problems.split(","), args.paths.split(",")
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory() as tmp:
        bank = import_bank(Path(tmp), slugs)
        rows = [r for slug in slugs for r in measure(bank[slug], slug, paths, args)]
    print_table(["problem", "kind", "path (taken)", "verdict", "plain s", "graded s",
                 "x plain", "requests", "req/s"], [_cells(r) for r in rows],
                title=f"Imported problems graded through the call proxy vs one plain pytest "
                      f"process (load average at start {load}, {args.reps} runs, median)")
    if any(r["requests"] is None for r in rows):  # a figure of "?" would rot unseen
        raise SystemExit("no request count from a grading's processes: did the runner's "
                         "entry points (judge_runner, judge_runner.proxy.serve) change? (TRUSTED, "
                         "SUBMISSION above)")
    blocking, waiting, plain = round_trip_floor(500 if args.quick else 5000)
    print(f"floor here: a pipe round trip between two processes {blocking:.1f} us (blocking "
          f"reads), {waiting:.1f} us (waiting in select); a method call in one process "
          f"{plain:.2f} us")
    for path in paths:
        mine = [r for r in rows if r["path"] == path]
        worst = max(mine, key=lambda r: r["s"] / r["plain"])
        print(f"{path}: median {statistics.median(r['s'] / r['plain'] for r in mine):.2f}x "
              f"plain, worst {worst['s'] / worst['plain']:.2f}x ({worst['slug']})")

if __name__ == "__main__":
    main()
