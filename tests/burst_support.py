"""A burst of real submissions to problem 143 (accepted, wrong-answer and never-finishing files)
from simulated students, and what the local judge says of each file: shared by the 10-submission
CI test (tests/web_platform/test_distributed_burst.py) and the 200-submission load benchmark
(benchmarks/load.py)."""

from __future__ import annotations

import hashlib
import re
import shutil
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from distributed_support import REPO, Student

PROBLEM = REPO / "problems" / "143-tiered-kv-cache"
# It computes rather than sleeps: limits are CPU time, so this is stopped at the import's CPU
# limit. A file that sleeps is stopped by the wall-clock net only at several times that, on two
# runs (judge/judging/clock.py), which would make the burst's TLE files its slowest by far.
TLE_SOURCE = "# expect: TLE (never finishes importing)\nwhile True:\n    pass\n"
MIX = {"AC": ["host_store.py", "chapter_walkthrough.py"],
       "WA": ["unprotected_hits.py", "host_fifo.py", "no_copy_back.py"]}


def problem_copy(dest: Path, min_test_s: float | None = None) -> tuple[Path, Path]:
    """Problem 143 under dest/problems (its time floor lowered to `min_test_s`, so a file that
    never finishes is TLE quickly), with dest/reference pointing at the handbook modules.
    Returns (problems dir, reference dir)."""
    problems = dest / "problems"
    folder = problems / PROBLEM.name
    if not folder.exists():
        shutil.copytree(PROBLEM, folder, ignore=shutil.ignore_patterns("__pycache__"))
        (dest / "reference").symlink_to(REPO / "reference")
    if min_test_s is not None:
        toml = folder / "problem.toml"
        text = re.sub(r"(?m)^min_test_s = .*$", f"min_test_s = {min_test_s}", toml.read_text())
        toml.write_text(text)
    return problems, dest / "reference"


def mix(n: int) -> list[tuple[str, str]]:
    """n (expected verdict, source) pairs: 40% AC, 40% WA, 20% TLE, interleaved."""
    ac = [(PROBLEM / "submissions/accepted" / f).read_text() for f in MIX["AC"]]
    wa = [(PROBLEM / "submissions/wrong_answer" / f).read_text() for f in MIX["WA"]]
    pattern = ["AC", "WA", "AC", "TLE", "WA"]
    out = []
    for i in range(n):
        kind = pattern[i % len(pattern)]
        pool = {"AC": ac, "WA": wa, "TLE": [TLE_SOURCE]}[kind]
        out.append((kind, pool[(i // len(pattern)) % len(pool)]))
    return out


def sha(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def local_verdicts(problems: Path, sources) -> dict[str, dict]:
    """What `judge.grade` says here of each distinct source: {sha: {verdict, score, tests}}.
    Graded warm, two at a time, as a worker grades them (that warm and cold agree is
    test_warm_same_verdicts.py's to show); one by one cold they were a third of the CI test."""
    from judge import grade, load_problem
    from judge.grading import warm_pool

    problem = load_problem(str(problems / PROBLEM.name))

    def one(src: str) -> dict:
        with warm_pool.forced(True):  # a context variable: this thread's own
            return summary(grade(problem, src, device="cpu").to_dict())

    distinct = list(dict.fromkeys(sources))
    with ThreadPoolExecutor(2, thread_name_prefix="local") as pool:
        return {sha(src): res for src, res in zip(distinct, pool.map(one, distinct))}


def summary(report: dict) -> dict:
    return {"verdict": report["verdict"], "score": report["score"],
            "tests": {t["name"]: t["verdict"] for t in report.get("tests") or []}}


def burst(server_url: str, items: list[tuple[str, str]], students: int,
          threads: int = 16) -> dict[int, str]:
    """Submit every item (round-robin over `students` simulated students) as fast as the server
    takes them; {submission id: source sha}."""
    people = [Student(server_url, i) for i in range(students)]
    accepted: dict[int, str] = {}
    lock = threading.Lock()

    def one(i: int) -> None:
        _, src = items[i]
        ans = people[i % students].submit(PROBLEM.name.split("-")[0], src, retry_s=120)
        assert ans is not None, "the server stopped answering"
        with lock:
            accepted[ans["id"]] = sha(src)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(len(items))))
    return accepted


def outcome(db_url: str, accepted: dict[int, str], expected: dict[str, dict],
            t0: float, t1: float, stuck_after_s: float) -> dict:
    """Figures of a finished (or timed-out) burst, from the database."""
    from sqlalchemy import func, select

    from web.store.db import Database, Submission, SubmissionEvent

    db = Database(db_url)
    with db.session() as s:
        subs = {r.id: r for r in s.scalars(select(Submission).where(
            Submission.id.in_(list(accepted))))}
        dones = dict(s.execute(select(SubmissionEvent.submission_id, func.count())
                               .where(SubmissionEvent.type == "done")
                               .group_by(SubmissionEvent.submission_id)).all())
    db.engine.dispose()
    lost = [i for i in accepted if i not in subs]
    stuck = [i for i, r in subs.items() if r.status != "done"]
    dup = [i for i in subs if dones.get(i, 0) > 1]
    mismatched = []
    for i, r in subs.items():
        if r.status == "done" and summary(r.report) != expected[accepted[i]]:
            mismatched.append((i, summary(r.report)["verdict"], expected[accepted[i]]["verdict"]))
    latency = sorted((r.finished_at - r.created_at).total_seconds()
                     for r in subs.values() if r.finished_at)
    last = max((r.finished_at for r in subs.values() if r.finished_at), default=None)
    first = min((r.created_at for r in subs.values()), default=None)
    span = (last - first).total_seconds() if last and first else float("nan")
    verdicts = {}
    for r in subs.values():
        verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
    return {"submissions": len(accepted), "graded": len(latency), "lost": len(lost),
            "stuck": len(stuck), "duplicated": len(dup), "mismatched": mismatched,
            "verdicts": dict(sorted(verdicts.items(), key=lambda kv: str(kv[0]))),
            "span_s": round(span, 1),
            "throughput_per_min": round(60 * len(latency) / span, 1) if span == span else None,
            "p50_s": round(statistics.median(latency), 1) if latency else None,
            "p95_s": round(latency[min(len(latency) - 1, int(0.95 * len(latency)))], 1)
            if latency else None,
            "submit_s": round(t1 - t0, 1), "stuck_after_s": stuck_after_s,
            "devices": sorted({(r.report or {}).get("provenance", {}).get("device") or "?"
                               for r in subs.values() if r.status == "done"})}


def wait_graded(db_url: str, ids, timeout: float) -> bool:
    from distributed_support import all_done
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all_done(db_url, ids):
            return True
        time.sleep(1.0)
    return False
