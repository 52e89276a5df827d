"""Grading latency: what a verdict costs against the bare cost of the same tests run
unsandboxed in one pytest process, on the cold path (a fresh sandboxed interpreter per suite
run) and the warm one (a fork of a warm zygote, judge/grading/warm_pool.py), in one run:

1. grade() on a problem's reference solution (full suite, warm reference cache), per path;
2. Submit -> verdict on `judge serve` (embedded, 1 worker): 5 accepted 143 files one after
   another (after one warm-up submission), each sent --idle seconds after the last verdict
   (the worker is idle when it comes, as a student's is), timed as a page sees it: from the
   POST to the `done` event on the submission's event stream; median, against the bare run
   (goal: <= 0.5x warm), and where the time goes: POST -> stored, -> 202, stored -> claimed
   by the worker, grade() itself, the worker's steps beyond grade() (claim, events, storing
   the report), stored report -> `done` seen by the client;
3. a burst of 12 (6 accepted, 6 wrong) on `judge serve --workers 2`: from the first Submit to
   the last verdict, against the bare run (goal: <= 4x), and whether every verdict is right;
4. (`profile`) where one grade() of an accepted file spends its time, per path: reference
   observations, grading folder, each suite run and, inside them, the sandbox's steps (zygote
   lookup, uid, grants, cgroup, the fork, the run, clean-up), judging and report
   (grading_profile.py). The serve part's table gives the rest: database, queue, wake-up.

    .venv/bin/python benchmarks/grading_latency.py [PROBLEM] [--repeat N] [--device cpu]
        [--paths cold,warm] [--parts grade,serve,burst,profile] [--idle S] [--quick]

--quick: one repetition, 1 sequential submission, a burst of 2: the script still works (a test
runs it); its figures mean nothing. Prints tables; no asserts.
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
sys.path[:0] = [str(REPO), str(REPO / "tests")]

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


def _grade_part(problem, source, device, repeat, path) -> dict:
    from judge.grading import warm_pool

    cache = ReferenceCache()
    with warm_pool.forced(path == "warm"):
        first = grade(problem, source, device=device, cache=cache)  # warms cache and zygote
        walls, reports = [], []
        for _ in range(repeat):
            t = time.perf_counter()
            reports.append(grade(problem, source, device=device, cache=cache))
            walls.append(time.perf_counter() - t)
    warm_pool.close_all()
    ph = reports[-1].timings.get("phases", {}).get("public", {})
    return {"first verdict": str(first.verdict), "median s": statistics.median(walls),
            "public start s": ph.get("start_s"), "public imports s": ph.get("import_s"),
            "grader path": reports[-1].provenance["sandbox_layers"].get("grader_path", "cold")}


def _serve(tmp: Path, workers: int, path: str, problems, reference):
    from distributed_support import Server

    os.environ["JUDGE_WARM"] = "1" if path == "warm" else "0"  # the server inherits it
    return Server(tmp, None, None, problems=problems, reference=reference,
                  timings={"lease_s": 60.0, "heartbeat_s": 10.0, "reaper_interval_s": 5.0},
                  extra=["--workers", str(workers)])


def _utc():
    from datetime import datetime, timezone
    return datetime.now(timezone.utc).replace(tzinfo=None)  # as web.store.db stamps its rows


def _one_submission(url: str, student, problem_id: str, src: str, db) -> dict:
    """One Submit as a page makes it: POST, then the event stream until its `done`; the
    client's wall clock and the stamps along the trip, in seconds after the POST."""
    import json

    import httpx

    from web.store.db import Submission

    t_post, m0 = _utc(), time.perf_counter()
    sid = student.submit(problem_id, src)["id"]
    m_202 = time.perf_counter()
    report = None
    with httpx.stream("GET", f"{url}/api/submissions/{sid}/events", headers=student.headers,
                      timeout=600) as r:
        kind = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind == "done":
                report = json.loads(line[6:]).get("report")
                break
    m_done = time.perf_counter()
    with db.session() as s:
        row = s.get(Submission, sid)
        stamps = {k: (getattr(row, k) - t_post).total_seconds()
                  for k in ("created_at", "started_at", "finished_at")}
    grade_s = float(((report or {}).get("timings") or {}).get("total_s") or 0.0)
    return {"client s": m_done - m0, "report": report, "202 s": m_202 - m0,
            "stored s": stamps["created_at"],
            "queue s": stamps["started_at"] - stamps["created_at"],
            "grade() s": grade_s,
            "worker beyond grade() s": stamps["finished_at"] - stamps["started_at"] - grade_s,
            "verdict seen s": (m_done - m0) - stamps["finished_at"]}


STEPS = ["stored s", "202 s", "queue s", "grade() s", "worker beyond grade() s",
         "verdict seen s"]


def _serve_part(tmp: Path, n: int, path: str, problems, reference, expected,
                idle_s: float) -> dict:
    """n Submits one after another, each `idle_s` after the last verdict (a student reads
    it first: the worker is idle when the next one comes), after one not counted."""
    from burst_support import MIX, PROBLEM, sha, summary
    from distributed_support import Student

    from web.store.db import Database

    src = (PROBLEM / "submissions/accepted" / MIX["AC"][0]).read_text()
    server = _serve(tmp, 1, path, problems, reference)
    db = Database(f"sqlite:///{tmp / 'data' / 'web.sqlite3'}")
    try:
        runs, wrong = [], 0
        for i in range(n + 1):  # the first one starts the worker's zygote: not counted
            if i:
                time.sleep(idle_s)
            r = _one_submission(server.url, Student(server.url, i), PROBLEM.name.split("-")[0],
                                src, db)
            if i:
                runs.append(r)
                wrong += r["report"] is None or summary(r["report"]) != expected[sha(src)]
        steps = {k: statistics.median(r[k] for r in runs) for k in STEPS}
        return {"median s": statistics.median(r["client s"] for r in runs),
                "each": [round(r["client s"], 2) for r in runs], "wrong": wrong,
                "steps": steps}
    finally:
        server.kill()
        db.engine.dispose()


def _burst_part(tmp: Path, n: int, path: str, problems, reference, expected) -> dict:
    from burst_support import MIX, PROBLEM, burst, outcome, wait_graded

    ac = [(PROBLEM / "submissions/accepted" / f).read_text() for f in MIX["AC"]]
    wa = [(PROBLEM / "submissions/wrong_answer" / f).read_text() for f in MIX["WA"]]
    items = [("AC", ac[i % len(ac)]) if i % 2 == 0 else ("WA", wa[i % len(wa)])
             for i in range(n)]
    server = _serve(tmp, 2, path, problems, reference)
    db = f"sqlite:///{tmp / 'data' / 'web.sqlite3'}"
    try:
        # one submission per worker first: what a worker pays once, not per burst
        warm = burst(server.url, [items[0], items[1]], students=2, threads=2)
        wait_graded(db, warm, timeout=600)
        t0 = time.monotonic()
        got = burst(server.url, items, students=n, threads=n)
        t1 = time.monotonic()
        wait_graded(db, got, timeout=1800)
        out = outcome(db, got, expected, t0, t1, 1800)
        return {"span s": out["span_s"], "graded": out["graded"], "n": n,
                "wrong verdicts": len(out["mismatched"]), "lost": out["lost"],
                "mismatched": out["mismatched"]}
    finally:
        server.kill()


def print_table(headers, rows) -> None:
    cells = [list(map(str, headers))] + [list(map(str, r)) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for i, r in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def main() -> None:
    import shutil
    import tempfile as _tf

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("problem", nargs="?", default="143")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--paths", default="cold,warm")
    ap.add_argument("--parts", default="grade,serve,burst,profile")
    ap.add_argument("--sequential", type=int, default=5)
    ap.add_argument("--idle", type=float, default=2.0,
                    help="seconds between a verdict and the next sequential Submit")
    ap.add_argument("--burst", type=int, default=12)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.repeat, args.sequential, args.burst, args.idle = 1, 1, 2, 0.5
    paths = [p for p in args.paths.split(",") if p]
    parts = [p for p in args.parts.split(",") if p]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} CPUs, load average {load} (a shared, loaded machine "
          "shows it in every figure)")
    problem = load_problem(args.problem)
    source = problem.reference_path.read_text()
    bares = [bare_run(problem, args.device) for _ in range(args.repeat)]
    b = statistics.median(bares)
    print(f"bare pytest, one process, unsandboxed, public + hidden of {problem.name}: median "
          f"{b:.2f}s [{', '.join(f'{w:.2f}' for w in bares)}]")
    rows, trips = [], []
    if "grade" in parts:
        for path in paths:
            r = _grade_part(problem, source, args.device, args.repeat, path)
            rows.append([f"grade() reference, median of {args.repeat}", path,
                         f"{r['median s']:.2f}", f"{r['median s'] / b:.2f}",
                         f"{r['first verdict']}; ran {r['grader path']}; public start "
                         f"{r['public start s']}s, imports {r['public imports s']}s"])
    if {"serve", "burst"} & set(parts):
        from burst_support import MIX, PROBLEM, local_verdicts, problem_copy

        tmp = Path(_tf.mkdtemp(prefix="kvp-latency-"))
        try:
            problems, reference = problem_copy(tmp)
            srcs = [(PROBLEM / "submissions/accepted" / f).read_text() for f in MIX["AC"]]
            srcs += [(PROBLEM / "submissions/wrong_answer" / f).read_text() for f in MIX["WA"]]
            expected = local_verdicts(problems, srcs)
            for path in paths:
                if "serve" in parts:
                    d = tmp / f"serve-{path}"
                    d.mkdir()
                    r = _serve_part(d, args.sequential, path, problems, reference, expected,
                                    args.idle)
                    rows.append([f"serve, 1 worker: Submit -> verdict seen, median of "
                                 f"{args.sequential}", path, f"{r['median s']:.2f}",
                                 f"{r['median s'] / b:.2f}",
                                 f"goal <= 0.5 warm; wrong verdicts {r['wrong']}; each "
                                 + ", ".join(map(str, r["each"]))])
                    trips.append([path, *(f"{r['steps'][k]:.3f}" for k in STEPS)])
                if "burst" in parts:
                    d = tmp / f"burst-{path}"
                    d.mkdir()
                    r = _burst_part(d, args.burst, path, problems, reference, expected)
                    rows.append([f"serve, 2 workers: burst of {args.burst}, first Submit -> "
                                 "last verdict", path, f"{r['span s']:.2f}",
                                 f"{r['span s'] / b:.2f}",
                                 f"goal <= 4; graded {r['graded']}/{r['n']}, wrong verdicts "
                                 f"{r['wrong verdicts']}, lost {r['lost']}"])
                    for sid, got, want in r["mismatched"]:
                        print(f"burst ({path}): submission {sid} graded {got}, expected {want}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print_table(["measure", "path", "seconds", "x bare", "notes"], rows)
    if "profile" in parts:
        from burst_support import MIX, PROBLEM
        from grading_profile import print_profile, profile

        src = (PROBLEM / "submissions/accepted" / MIX["AC"][0]).read_text()
        for path in paths:
            print_profile(f"{PROBLEM.name}'s accepted {MIX['AC'][0]}", path,
                          profile(load_problem(PROBLEM), src, path, args.repeat))
    if trips:
        print(f"\nwhere a sequential Submit's time goes (medians, seconds; the next Submit "
              f"{args.idle:g} s after each verdict):")
        print_table(["path", "POST -> stored", "POST -> 202", "stored -> claimed", "grade()",
                     "worker beyond grade()", "stored report -> verdict seen"], trips)


if __name__ == "__main__":
    main()
