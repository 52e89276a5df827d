"""Operations in the embedded mode (SQLite, no servers to start): a database of an earlier
version gains the new columns, regrades with review, the parity comparison, and the worker API
driven by the same job runner a remote worker uses."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from fastapi.testclient import TestClient

from judge.authoring.parity import parity_diff
from judge.problem import ProblemBank
from web.app import create_app
from web.client import WorkerClient
from web.jobs.remote_backend import ApiBackend
from web.jobs.runner import run_job
from web.settings import Settings
from web.store.db import Database

from e2e.fake_grader import FIXTURES, PROBLEMS, quick

TOKEN, WTOKEN = "teacher-secret-token", "worker-secret-token"


def make_settings(tmp_path: Path, **kw) -> Settings:
    return Settings(data_dir=tmp_path / "data", problems_dir=PROBLEMS,
                    reference_dir=FIXTURES / "reference", reaper_interval_s=0.2,
                    instructor_token=TOKEN, worker_token=WTOKEN, **kw)


def wait_done(c, sid, headers=None, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = c.get(f"/api/submissions/{sid}", headers=headers or {}).json()
        if body["status"] == "done":
            return body
        time.sleep(0.05)
    raise AssertionError(f"submission {sid} not graded: {body}")


def test_a_database_of_the_previous_version_gains_the_new_columns(tmp_path):
    path = tmp_path / "old.sqlite3"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE visitors (id INTEGER PRIMARY KEY, token_hash VARCHAR(64) UNIQUE,
            display_name VARCHAR(64), created_at DATETIME, last_seen_at DATETIME);
        CREATE TABLE submissions (id INTEGER PRIMARY KEY, visitor_id INTEGER, problem_id
            VARCHAR(32), code TEXT, code_sha256 VARCHAR(64), status VARCHAR(8), verdict
            VARCHAR(8), score FLOAT, report_json TEXT, attempts INTEGER, lease_owner
            VARCHAR(200), lease_expires_at DATETIME, heartbeat_at DATETIME, created_at DATETIME,
            started_at DATETIME, finished_at DATETIME);
        CREATE TABLE workers (id VARCHAR(200) PRIMARY KEY, started_at DATETIME, heartbeat_at
            DATETIME, status VARCHAR(16), current_submission_id INTEGER, graded INTEGER);
        INSERT INTO visitors VALUES (1, 'h', NULL, '2025-01-01', '2025-01-01');
        INSERT INTO submissions (id, visitor_id, problem_id, code, code_sha256, status, attempts,
            created_at) VALUES (1, 1, '901', 'x = 1', '-', 'queued', 0, '2025-01-01'),
            (2, 1, '901', 'x = 2', '-', 'queued', 0, '2025-01-01');
    """)
    con.commit()
    con.close()
    db = Database(f"sqlite:///{path}")
    db.create_all()
    db.create_all()  # twice: nothing left to add
    assert db.queued_jobs() == [(1, 10, None), (2, 10, None)]
    from web.store.db import Submission
    with db.session() as s:
        sub = s.get(Submission, 2)
        assert sub.kind == "live" and db.queue_position(s, sub) == 2


def test_regrade_in_the_embedded_mode(tmp_path):
    st = make_settings(tmp_path)
    hdr = {"X-Instructor-Token": TOKEN}
    with TestClient(create_app(st, grader=quick, workers=1)) as c:
        ids = [c.post("/api/submissions", json={"problem": "901", "code": code}).json()["id"]
               for code in ("x = 1", "x = 2  # BUG")]
        for i in ids:
            wait_done(c, i)
        r = c.post("/api/instructor/regrades", json={"problem": "901"}, headers=hdr)
        assert r.status_code == 202, r.text
        rid = r.json()["id"]
        deadline = time.monotonic() + 30
        while (data := c.get(f"/api/instructor/regrades/{rid}", headers=hdr).json())[
                "state"] == "grading" and time.monotonic() < deadline:
            time.sleep(0.05)
        # One student, latest submission only (the BUG one): unchanged.
        assert data["total"] == 1 and data["changes"] == {"same": 1}
        assert c.post(f"/api/instructor/regrades/{rid}/approve",
                      headers=hdr).json()["status"] == "approved"
        mine = c.get("/api/submissions").json()["submissions"]
        assert [s["id"] for s in mine] == ids[::-1]  # regrade jobs are not theirs to see
        o = c.get("/api/instructor/overview", headers=hdr).json()
        assert o["regrades"][0]["id"] == rid and o["queue"]["kind"] == "sqlite"
        assert o["workers"][0]["kind"] == "embedded" and o["workers"][0]["device"] in (
            "cpu", "cuda")
        r = c.post("/api/instructor/parity", json={"problem": "901", "code": "x = 1"},
                   headers=hdr)
        assert r.status_code == 409 and r.json()["error"]["code"] == "no_gpu_worker"


def test_parity_diff_compares_per_test_results():
    def rep(verdict, *tests):
        return {"verdict": verdict, "tests": [{"name": n, "verdict": v} for n, v in tests]}
    a = rep("AC", ("t1", "AC"), ("t2", "AC"))
    assert parity_diff(a, rep("AC", ("t1", "AC"), ("t2", "AC"))) == []
    assert parity_diff(a, rep("WA", ("t1", "AC"), ("t2", "WA"))) == [
        {"test": "t2", "cpu": "AC", "cuda": "WA"}]
    assert parity_diff(a, rep("IE")) == [{"test": "t1", "cpu": "AC", "cuda": None},
                                         {"test": "t2", "cpu": "AC", "cuda": None}]


def test_worker_api_with_the_remote_workers_job_runner(tmp_path):
    """The remote worker's half (ApiBackend + run_job) against the API, in one process."""
    st = make_settings(tmp_path)
    with TestClient(create_app(st, grader=quick, workers=0)) as c:
        sid = c.post("/api/submissions", json={"problem": "901", "code": "x = 1"}).json()["id"]
        client = WorkerClient("http://testserver", WTOKEN, http=c)
        c.headers["X-Worker-Token"] = WTOKEN
        reg = client.call("/api/workers/register", {"host": "gpu-7", "pid": 42,
                                                    "device": "cpu"})
        (wid,) = reg["workers"]
        backend = ApiBackend(client)
        catalog = ProblemBank(st.problems_dir, st.reference_dir)
        assert run_job(backend, catalog, quick, sid, wid, 0.05, check_version=True,
                       provenance={"worker": wid}) == "stored"
        assert run_job(backend, catalog, quick, sid, wid, 0.05) == "skipped"
        del c.headers["X-Worker-Token"]
        done = c.get(f"/api/submissions/{sid}").json()
        assert done["verdict"] == "AC" and done["report"]["provenance"]["worker"] == wid
        o = c.get("/api/instructor/workers", headers={"X-Instructor-Token": TOKEN}).json()
        (w,) = o["workers"]
        assert (w["host"], w["kind"], w["graded"], w["status"]) == ("gpu-7", "remote", 1,
                                                                     "idle")


def test_a_cuda_worker_without_cuda_says_so(tmp_path):
    import subprocess
    import sys

    from web.settings import REPO_ROOT
    res = subprocess.run([sys.executable, "-m", "web.cli", "worker", "--queue",
                          "redis://127.0.0.1:1/0", "--server", "http://127.0.0.1:1",
                          "--worker-token", "t", "--device", "cuda"],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT),
                              "JUDGE_FORCE_CPU": "1"})
    assert res.returncode == 2 and "no CUDA device is available" in res.stderr, res.stderr
    res = subprocess.run([sys.executable, "-m", "web.cli", "worker", "--server",
                          "http://127.0.0.1:1"], cwd=REPO_ROOT, capture_output=True, text=True,
                         timeout=120, env={"PATH": "/usr/bin:/bin",
                                           "PYTHONPATH": str(REPO_ROOT)})
    assert res.returncode == 2 and "--queue" in res.stderr
