"""Distributed mode on loopback with real PostgreSQL and Redis: submit -> Redis -> a worker on
"another host" (a process with no database credentials) -> the worker API -> a stored verdict;
worker registration, the instructor's view, queue positions and priorities, `judge parity`."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
from distributed_support import (
    FIXTURES,
    INSTRUCTOR_TOKEN,
    REPO,
    WORKER_TOKEN,
    Server,
    Student,
    Worker,
    all_done,
    done_event_counts,
    instructor_cookies,
    rows,
    wait_for,
)

PACED = "tests.distributed_graders:paced"
FIX = FIXTURES / "problems" / "901-toy-lru"
ACCEPTED = (FIX / "submissions/accepted/lru_plain_dict.py").read_text()


def test_submit_to_verdict_through_a_remote_worker(tmp_path, server, pg_url, redis_srv):
    worker = Worker(tmp_path, redis_srv.url(), server.url, grader=PACED)
    try:
        students = [Student(server.url, i) for i in range(3)]
        codes = ["x = 1", "x = 2  # BUG", "x = 3"]
        ids = [st.submit("901", c)["id"] for st, c in zip(students, codes)]
        wait_for(lambda: all_done(pg_url, ids), 60, "three verdicts")
        got = [st.get(i) for st, i in zip(students, ids)]
        assert [g["verdict"] for g in got] == ["AC", "WA", "AC"]
        prov = got[0]["report"]["provenance"]
        assert prov["worker"].split(":")[1] == str(worker.pid) and prov["worker_device"] == "cpu"
        assert done_event_counts(pg_url) == {i: 1 for i in ids}
        r = rows(pg_url)
        assert all(r[i].graded_by.split(":")[1] == str(worker.pid) for i in ids)

        # The instructor sees the worker: host, device, jobs done, last seen.
        o = server.instructor("GET", "/api/instructor/overview").json()
        assert o["queue"]["kind"] == "redis" and o["queue"]["done"] == 3
        (w,) = [w for w in o["workers"] if w["kind"] == "remote"]
        assert w["device"] == "cpu" and w["graded"] == 3 and w["status"] == "idle"
        assert w["host"] and w["last_seen_s"] < 10
        page = httpx.get(server.url + "/instructor", cookies=instructor_cookies(server)).text
        assert w["id"] in page and "jobs done" in page and "last seen" in page

        # Progress events sent by the worker through the API reach the student's stream.
        with httpx.stream("GET", f"{server.url}/api/submissions/{ids[1]}/events",
                          headers=students[1].headers, timeout=30) as resp:
            text = "".join(resp.iter_text())
        assert "event: running" in text and "event: test_finished" in text
        assert text.rstrip().endswith('"score": 0.0}') or "event: done" in text
    finally:
        worker.stop()
    assert worker.proc.returncode == 0, worker.log()
    o = server.instructor("GET", "/api/instructor/workers").json()
    assert [w["status"] for w in o["workers"] if w["kind"] == "remote"] == ["stopped"]


def test_worker_api_needs_the_worker_token(server):
    body = {"host": "h", "pid": 1, "device": "cpu"}
    assert httpx.post(server.url + "/api/workers/register", json=body).status_code == 401
    r = httpx.post(server.url + "/api/workers/register", json=body,
                   headers={"X-Worker-Token": "wrong"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "worker_token_wrong"
    ok = {"X-Worker-Token": WORKER_TOKEN}
    r = httpx.post(server.url + "/api/workers/register", json=body, headers=ok)
    assert r.status_code == 200 and r.json()["workers"] == ["h:1:slot-1"]
    # Nothing to claim; an unregistered worker is told to register.
    r = httpx.post(server.url + "/api/workers/jobs/999/claim", json={"worker": "h:1:slot-1"},
                   headers=ok)
    assert r.json()["outcome"] == "skipped"
    r = httpx.post(server.url + "/api/workers/jobs/999/claim", json={"worker": "nobody"},
                   headers=ok)
    assert r.status_code == 409 and r.json()["error"]["code"] == "unknown_worker"
    # A result nobody holds the lease for is not stored.
    r = httpx.post(server.url + "/api/workers/jobs/999/result", headers=ok,
                   json={"owner": "h:1:slot-1:x", "report": {"verdict": "AC"}})
    assert r.json() == {"stored": False}


def test_live_submissions_go_before_regrades(tmp_path, server, pg_url, redis_srv):
    from web.jobs import regrades
    from web.store.db import Database

    # Ten students with a graded submission each ...
    first = Worker(tmp_path, redis_srv.url(), server.url, grader=PACED, name="w0",
                   env={"KVP_PACE_S": "0"})
    students = [Student(server.url, i) for i in range(10)]
    old = [st.submit("901", f"x = {i}")["id"] for i, st in enumerate(students)]
    wait_for(lambda: all_done(pg_url, old), 60, "the first gradings")
    first.stop()
    # ... then a regrade of all ten is queued, and then three live submissions arrive.
    db = Database(pg_url)
    rg = regrades.start(db, "901", enqueue=None)   # the server's reaper queues the jobs
    assert rg["total"] == 10 and rg["state"] == "grading"
    time.sleep(1.5)
    live = [st.submit("901", "y = 1") for st in students[:3]]
    # Queue positions count students' submissions only: regrade jobs are never ahead.
    assert [x["queue_position"] for x in live] == [1, 2, 3]
    assert students[1].get(live[1]["id"])["queue_position"] == 2
    # One worker: the live ones are graded first although the regrade was queued before.
    worker = Worker(tmp_path, redis_srv.url(), server.url, grader=PACED, name="w1",
                    env={"KVP_PACE_S": "0.1"})
    try:
        jobs = [it["job"] for it in rg["items"]]
        wait_for(lambda: all_done(pg_url, jobs + [x["id"] for x in live]), 60, "all jobs")
    finally:
        worker.stop()
    r = rows(pg_url)
    last_live = max(r[x["id"]].started_at for x in live)
    assert all(r[j].started_at > last_live for j in jobs)
    # Students never see regrade jobs before approval.
    mine = httpx.get(server.url + "/api/submissions", headers=students[0].headers).json()
    assert [s["id"] for s in mine["submissions"]] == [live[0]["id"], old[0]]
    assert httpx.get(f"{server.url}/api/submissions/{jobs[0]}",
                     headers=students[0].headers).status_code == 404


def _parity(server, path, *extra):
    return subprocess.run(
        [sys.executable, "-m", "web", "parity", "901", str(path), "--server", server.url,
         "--token", INSTRUCTOR_TOKEN, "--problems", str(FIXTURES / "problems"), *extra],
        cwd=REPO, capture_output=True, text=True, timeout=300)


def test_parity_needs_a_gpu_worker(tmp_path, server, redis_srv):
    cpu_worker = Worker(tmp_path, redis_srv.url(), server.url, grader=PACED)
    try:
        wait_for(lambda: server.instructor("GET", "/api/instructor/workers").json()["workers"],
                 30, "the CPU worker to register")
        f = tmp_path / "lru.py"
        f.write_text(ACCEPTED)
        res = _parity(server, f)
    finally:
        cpu_worker.stop()
    assert res.returncode == 3, res.stdout + res.stderr
    assert "NO GPU WORKER" in res.stderr and "CUDA" in res.stderr


def test_parity_against_a_gpu_worker(tmp_path, server, pg_url, redis_srv):
    cpu_worker = Worker(tmp_path, redis_srv.url(), server.url, grader=PACED, name="cpu")
    gpu_worker = Worker(tmp_path, redis_srv.url(), server.url,
                        grader="tests.distributed_graders:pretend_gpu",
                        extra=["--pretend-device", "cuda"], name="gpu")
    try:
        wait_for(lambda: len(server.instructor("GET", "/api/instructor/workers")
                             .json()["workers"]) == 2, 30, "both workers to register")
        same, differs = tmp_path / "same.py", tmp_path / "differs.py"
        same.write_text(ACCEPTED)
        differs.write_text(ACCEPTED + "\n# GPU_DIFFERS\n")
        a = _parity(server, same)
        b = _parity(server, differs, "--json")
    finally:
        cpu_worker.stop()
        gpu_worker.stop()
    assert a.returncode == 0, a.stdout + a.stderr
    assert "SAME" in a.stdout and "Pretend GPU" in a.stdout
    assert b.returncode == 1, b.stdout + b.stderr
    import json
    out = json.loads(b.stdout[b.stdout.index("{"):])
    assert out["verdict"] == "PARITY" and len(out["differences"]) == 1
    assert out["cuda"]["device"] == "cuda" and out["cpu"]["device"] == "cpu"
    # Both parity jobs ran on the GPU worker, never on the CPU one.
    parity = [r for r in rows(pg_url).values() if r.kind == "parity"]
    assert len(parity) == 2
    assert all(r.graded_by.split(":")[1] == str(gpu_worker.pid) for r in parity)


def test_a_problem_that_needs_a_gpu_waits_for_a_gpu_worker(tmp_path, pg_url, redis_srv):
    import shutil
    problems = tmp_path / "problems"
    shutil.copytree(FIX, problems / FIX.name)
    toml = problems / FIX.name / "problem.toml"
    toml.write_text(toml.read_text().replace('requires = []', 'requires = ["cuda"]'))
    (tmp_path / "reference").symlink_to(FIXTURES / "reference")
    server = Server(tmp_path, pg_url, redis_srv.url(), problems=problems,
                    reference=tmp_path / "reference")
    common = dict(problems=problems, reference=tmp_path / "reference", grader=PACED)
    cpu = Worker(tmp_path, redis_srv.url(), server.url, name="cpu", **common)
    gpu = None
    try:
        sid = Student(server.url, 1).submit("901", "x = 1")["id"]
        time.sleep(2.5)  # the CPU worker does not take it
        assert rows(pg_url)[sid].status == "queued"
        gpu = Worker(tmp_path, redis_srv.url(), server.url, name="gpu",
                     extra=["--pretend-device", "cuda"], **common)
        wait_for(lambda: all_done(pg_url, [sid]), 60, "the GPU worker to grade it")
    finally:
        cpu.stop()
        if gpu is not None:
            gpu.stop()
        server.kill()
    assert rows(pg_url)[sid].graded_by.split(":")[1] == str(gpu.pid)
