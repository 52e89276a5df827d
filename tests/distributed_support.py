"""Throwaway PostgreSQL and Redis servers on loopback, and the platform's processes, for the
distributed-grading tests (tests/test_distributed_*.py).

PostgreSQL: `initdb` into a temporary folder and `pg_ctl` on a random port, as the `postgres`
user when we are root (PostgreSQL refuses to run as root). Redis: `redis-server --save ''` on a
random port, so a restart loses everything. Both are found under /usr/lib/postgresql/*/bin and on
PATH; without them the tests are skipped with the reason.
"""

from __future__ import annotations

import atexit
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest
from paths import REPO

FIXTURES = REPO / "tests" / "e2e" / "fixtures"
WORKER_TOKEN = "worker-secret-for-tests"
INSTRUCTOR_TOKEN = "instructor-secret-for-tests"
FAST = {"lease_s": 3.0, "heartbeat_s": 0.5, "reaper_interval_s": 0.5}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout: float, what: str, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


# ---------------------------------------------------------------- PostgreSQL


def pg_bindir() -> Path | None:
    cands = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parent.parent.name)
                   if Path(p).parent.parent.name.isdigit() else 0)
    if cands:
        return Path(cands[-1]).parent
    found = shutil.which("initdb")
    return Path(found).parent if found else None


class PostgresCluster:
    def __init__(self):
        self.bindir = pg_bindir()
        self.root = Path(tempfile.mkdtemp(prefix="kvp-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.as_user = os.geteuid() == 0
        if self.as_user:
            shutil.chown(self.root, "postgres", "postgres")
        self._run([self.bindir / "initdb", "-D", self.data, "-U", "postgres", "--auth=trust",
                   "-E", "UTF8", "--no-sync"])
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300")
        self._run([self.bindir / "pg_ctl", "-D", self.data, "-o", opts, "-l",
                   self.root / "log", "-w", "-t", "60", "start"])
        self._n = 0

    def _run(self, cmd) -> None:
        cmd = [str(c) for c in cmd]
        if self.as_user:
            cmd = ["runuser", "-u", "postgres", "--"] + cmd
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{res.stdout}\n{res.stderr}")

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}"

    def new_database(self) -> str:
        import psycopg
        self._n += 1
        name = f"kvp_{os.getpid()}_{self._n}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run([self.bindir / "pg_ctl", "-D", self.data, "-m", "immediate", "stop"])
        except Exception:
            pass
        shutil.rmtree(self.root, ignore_errors=True)


_CLUSTER: PostgresCluster | None = None


def postgres() -> PostgresCluster:
    """One cluster per test session (started on first use, stopped at exit)."""
    global _CLUSTER
    if pg_bindir() is None:
        pytest.skip("PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin "
                    "or on PATH): apt-get install postgresql")
    if os.geteuid() == 0:
        try:
            import pwd
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run PostgreSQL as")
    if _CLUSTER is None:
        _CLUSTER = PostgresCluster()
        atexit.register(_CLUSTER.stop)
    return _CLUSTER


# ---------------------------------------------------------------- Redis


class RedisServer:
    def __init__(self, port: int | None = None):
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            pytest.skip("Redis is not installed (no redis-server on PATH): "
                        "apt-get install redis-server")
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        self.start()

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no",
             "--loglevel", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self.ping, 20, f"redis-server on port {self.port}")

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


# ---------------------------------------------------------------- the platform's processes


def _env(extra: dict | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO), KVPRACTICE_WORKER_TOKEN=WORKER_TOKEN,
               PYTHONUNBUFFERED="1")
    env.pop("KVPRACTICE_INSTRUCTOR_TOKEN", None)
    env.update(extra or {})
    return env


class Server:
    """`judge serve --queue redis://... --db postgresql://...` as a child process (without
    db_url and queue_url: the embedded mode, SQLite in tmp/data)."""

    def __init__(self, tmp: Path, db_url: str | None, queue_url: str | None, problems: Path = None,
                 reference: Path = None, timings: dict | None = None, extra: list | None = None):
        self.tmp, self.db_url, self.queue_url = Path(tmp), db_url, queue_url
        self.problems = problems or FIXTURES / "problems"
        self.reference = reference or FIXTURES / "reference"
        self.timings = dict(FAST, **(timings or {}))
        self.extra = extra or []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.start()

    def start(self) -> None:
        self.starts += 1
        log = open(self.tmp / f"server-{self.starts}.log", "wb")
        cmd = [sys.executable, "-m", "web.cli", "serve", "--skip-build-check",
               "--host", "127.0.0.1", "--port", str(self.port), "--data", str(self.tmp / "data"),
               *(["--db", self.db_url] if self.db_url else []),
               *(["--queue", self.queue_url] if self.queue_url else []),
               "--problems", str(self.problems), "--reference", str(self.reference),
               "--worker-token", WORKER_TOKEN, "--instructor-token", INSTRUCTOR_TOKEN,
               "--log-level", "warning",
               # Every simulated student comes from 127.0.0.1: lift the per-address limits.
               "--max-queued-per-address", "100000", "--rate-limit-per-address", "100000",
               *self.extra]
        for k, v in self.timings.items():
            cmd += [f"--{k.replace('_', '-')}", str(v)]
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=_env(), stdout=log,
                                     stderr=subprocess.STDOUT)
        wait_for(self.ready, 60, f"the server on port {self.port}", every=0.1)

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"the server exited ({self.proc.returncode}):\n"
                                 f"{self.log()[-4000:]}")
        try:
            return httpx.get(self.url + "/api/problems", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def log(self) -> str:
        """The whole log of the current start (a test reads what it means, never a tail)."""
        return (self.tmp / f"server-{self.starts}.log").read_text(errors="replace")

    def kill(self, sig=signal.SIGKILL) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)

    def instructor(self, method: str, path: str, **kw) -> httpx.Response:
        return httpx.request(method, self.url + path, timeout=30,
                             headers={"X-Instructor-Token": INSTRUCTOR_TOKEN}, **kw)


class Worker:
    """`judge worker --queue ... --server ...` as a child process (no database credentials)."""

    def __init__(self, tmp: Path, queue_url: str, server_url: str, grader: str | None = None,
                 problems: Path = None, reference: Path = None, env: dict | None = None,
                 extra: list | None = None, name: str = "worker"):
        self.log_path = Path(tmp) / f"{name}.log"
        cmd = [sys.executable, "-m", "web.cli", "worker", "--queue", queue_url,
               "--server", server_url, "--problems", str(problems or FIXTURES / "problems"),
               "--reference", str(reference or FIXTURES / "reference"), *(extra or [])]
        if grader:
            cmd += ["--grader", grader]
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=_env(env), stdout=open(self.log_path,
                                                                              "wb"),
                                     stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout: float = 30) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class Student:
    """A simulated student: their own bearer token."""

    def __init__(self, server_url: str, n: int):
        self.url = server_url
        self.headers = {"Authorization": f"Bearer student-{n:04d}-{os.urandom(8).hex()}"}

    def submit(self, problem: str, code: str, retry_s: float = 0.0) -> dict | None:
        """The 202 answer, or None when the server could not be reached for retry_s seconds."""
        deadline = time.monotonic() + retry_s
        while True:
            try:
                r = httpx.post(self.url + "/api/submissions", headers=self.headers,
                               json={"problem": problem, "code": code}, timeout=30)
                assert r.status_code == 202, r.text
                return r.json()
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.2)

    def get(self, sid: int) -> dict:
        r = httpx.get(f"{self.url}/api/submissions/{sid}", headers=self.headers, timeout=30)
        assert r.status_code == 200, r.text
        return r.json()


def rows(db_url: str):
    """{id: Submission row} of every submission, straight from the database."""
    from web.store.db import Database, Submission
    db = Database(db_url)
    try:
        with db.session() as s:
            return {r.id: r for r in s.query(Submission).all()}
    finally:
        db.engine.dispose()


def done_event_counts(db_url: str) -> dict[int, int]:
    from sqlalchemy import func, select

    from web.store.db import Database, SubmissionEvent
    db = Database(db_url)
    try:
        with db.session() as s:
            return dict(s.execute(select(SubmissionEvent.submission_id, func.count())
                                  .where(SubmissionEvent.type == "done")
                                  .group_by(SubmissionEvent.submission_id)).all())
    finally:
        db.engine.dispose()


def all_done(db_url: str, ids) -> bool:
    r = rows(db_url)
    return all(i in r and r[i].status == "done" for i in ids)


def instructor_cookies(server) -> httpx.Cookies:
    """The instructor page's session (an opaque id, never the token), signed in as a browser
    does: the token posted to /instructor/login."""
    r = httpx.post(server.url + "/instructor/login", data={"token": INSTRUCTOR_TOKEN},
                   headers={"Origin": server.url}, follow_redirects=False)
    assert r.status_code == 303 and "wrong" not in r.headers["location"], r.text
    return r.cookies
