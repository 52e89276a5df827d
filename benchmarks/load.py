"""Load: a burst of submissions to problem 143 from simulated students (accepted, wrong-answer and
never-finishing files), in the embedded mode and in distributed mode with N remote workers.

    .venv/bin/python benchmarks/load.py [--n 200] [--students 100] [--workers 2]
                                        [--modes embedded,distributed] [--min-test-s S] [--json F]
                                        [--quick]

--quick: 4 submissions from 2 students, embedded only, a 1 s time floor: the script still works (a test runs
it); its figures mean nothing. JUDGE_WARM=0/1 in the environment picks the grading path.

Each mode gets a fresh platform on loopback: the embedded one is `judge serve --workers N`
(SQLite, Huey's SQLite queue, grading threads in the server); the distributed one is `judge
serve --queue redis://... --db postgresql://...` with N `judge worker --server ...` processes,
on a throwaway PostgreSQL and Redis (as the tests start them; needs postgresql and redis-server
installed). Every submission is sent at once (16 connections), then the script waits until all
are graded or --stuck-after seconds pass, and reports: throughput, p50/p95 time to verdict
(created -> finished, server clock), lost (accepted but not stored), stuck (not graded in time),
duplicated (more than one stored result) and mismatched (a verdict, score or test result that
differs from what the local judge gives for the same file, graded here first).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from burst_support import burst, local_verdicts, mix, outcome, problem_copy, wait_graded  # noqa
from distributed_support import RedisServer, Server, Worker, postgres  # noqa: E402

# The server's default lease timings (a real deployment's), not the tests' fast ones.
TIMINGS = {"lease_s": 60.0, "heartbeat_s": 10.0, "reaper_interval_s": 5.0}


def run_embedded(tmp: Path, args, items, expected, problems, reference) -> dict:
    server = Server(tmp, None, None, problems=problems, reference=reference,
                    timings=TIMINGS, extra=["--workers", str(args.workers)])
    try:
        return _drive(server.url, f"sqlite:///{tmp / 'data' / 'web.sqlite3'}", args, items,
                      expected)
    finally:
        server.kill()


def run_distributed(tmp: Path, args, items, expected, problems, reference) -> dict:
    pg_url = postgres().new_database()
    redis = RedisServer()
    server = Server(tmp, pg_url, redis.url(), problems=problems, reference=reference,
                    timings=TIMINGS)
    workers = [Worker(tmp, redis.url(), server.url, problems=problems, reference=reference,
                      name=f"worker{i}") for i in range(args.workers)]
    try:
        time.sleep(3)  # let the workers register and warm up, as they would before a deadline
        return _drive(server.url, pg_url, args, items, expected)
    finally:
        for w in workers:
            w.stop()
        server.kill()
        redis.stop()


def _drive(url: str, db_url: str, args, items, expected) -> dict:
    t0 = time.monotonic()
    accepted = burst(url, items, students=args.students)
    t1 = time.monotonic()
    wait_graded(db_url, accepted, timeout=args.stuck_after)
    return outcome(db_url, accepted, expected, t0, t1, args.stuck_after)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=200, help="submissions (default 200)")
    ap.add_argument("--students", type=int, default=100, help="simulated students (default 100)")
    ap.add_argument("--workers", type=int, default=2, help="grading workers (default 2)")
    ap.add_argument("--modes", default="embedded,distributed")
    ap.add_argument("--min-test-s", type=float, help="lower problem 143's time floor (a "
                    "never-finishing file is TLE after this long; default: the problem's own)")
    ap.add_argument("--stuck-after", type=float, default=1800.0,
                    help="seconds after which an ungraded submission counts as stuck")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--quick", action="store_true", help="tiny burst, embedded only")
    args = ap.parse_args()
    if args.quick:  # its never-finishing file TLE after 1 s, not the problem's 5 s floor
        args.n, args.students, args.modes = 4, 2, "embedded"
        args.min_test_s = 1.0 if args.min_test_s is None else args.min_test_s

    tmp = Path(tempfile.mkdtemp(prefix="kvp-load-"))
    problems, reference = problem_copy(tmp, args.min_test_s)
    items = mix(args.n)
    t = time.monotonic()
    expected = local_verdicts(problems, [src for _, src in items])
    print(f"local judge: {len(expected)} distinct files graded in {time.monotonic() - t:.1f} s: "
          + ", ".join(sorted(v["verdict"] for v in expected.values())), flush=True)
    results = {}
    for mode in args.modes.split(","):
        run = {"embedded": run_embedded, "distributed": run_distributed}[mode]
        d = tmp / mode
        d.mkdir()
        print(f"{mode}: {args.n} submissions from {args.students} students, {args.workers} "
              "workers...", flush=True)
        results[mode] = run(d, args, items, expected, problems, reference)
        print(f"  {results[mode]}", flush=True)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(),
               "platform": platform.platform()}
    print(f"\nmachine: {machine['cpus']} CPUs, {machine['platform']}")
    cols = ("mode", "graded", "span s", "per min", "p50 s", "p95 s", "lost", "stuck", "dup",
            "mismatch")
    rows = [(m, f"{r['graded']}/{r['submissions']}", r["span_s"], r["throughput_per_min"],
             r["p50_s"], r["p95_s"], r["lost"], r["stuck"], r["duplicated"],
             len(r["mismatched"])) for m, r in results.items()]
    widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) for i, c in enumerate(cols)]
    for i, r in enumerate([cols] + rows):
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "args": vars(args) | {
            "json": str(args.json)}, "results": results}, indent=1, default=str))
    bad = any(r["lost"] or r["stuck"] or r["duplicated"] or r["mismatched"]
              for r in results.values())
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
