"""A student's package as a student has it: unzipped into a folder of its own and run with a
Python that has pytest and nothing else of this project (no torch, numpy, pydantic or httpx:
`-S` and a PYTHONPATH of pytest's files only, tests/page_support.py's `site`), plus the platform
served on loopback and an account with a personal token, for `judge.py submit`."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import httpx
from page_support import page_root
from paths import REPO


def pytest_only_site(folder: Path) -> Path:
    """A folder with pytest and its dependencies (symbolic links), nothing else."""
    return page_root(folder) / "site"


def unpack(data: bytes, dest: Path) -> Path:
    """The package's one top folder, unzipped under `dest`."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        tops = {n.split("/", 1)[0] for n in z.namelist()}
        assert len(tops) == 1, tops
        for info in z.infolist():
            z.extract(info, dest)
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                os.chmod(dest / info.filename, mode)
    return dest / tops.pop()


def student_env(site: Path, home: Path, **extra) -> dict:
    """A clean environment: no PYTHONPATH but pytest's, a home of its own for the token."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "LANG": "C.UTF-8", "NO_COLOR": "1", "PYTHONPATH": str(site),
            "KVPRACTICE_CREDENTIALS": str(home / ".config" / "kvpractice" / "tokens.json"),
            **extra}


def judge_py(root: Path, env: dict, *args, stdin: str | None = None, timeout: float = 300):
    """`python -S judge.py ARGS` in the package's folder."""
    return subprocess.run([sys.executable, "-S", "judge.py", *map(str, args)], cwd=root,
                          env=env, input=stdin, capture_output=True, text=True, timeout=timeout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def platform(data: Path, *args, env: dict | None = None, start_s: float = 120):
    """`python -m web.cli serve` on a free port (one worker, the bank unless --problems is
    given), its base URL once /api/problems answers."""
    port = free_port()
    cmd = [sys.executable, "-m", "web.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
           "--data", str(data), "--workers", "1", "--log-level", "warning", *args]
    log = open(data / "server.log", "w")
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env={
        **os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests'}", **(env or {})})
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + start_s
    while True:
        try:
            urllib.request.urlopen(base + "/api/problems", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise AssertionError("the server did not start:\n" +
                                     (data / "server.log").read_text())
            time.sleep(0.2)
    try:
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def signed_up(base: str, username: str) -> httpx.Client:
    """A browser-like client signed up on the server (its session cookie kept)."""
    c = httpx.Client(base_url=base, headers={"Origin": base}, timeout=60)
    r = c.post("/signup", data={"username": username, "password": "correct horse battery",
                                "display_name": username})
    assert r.status_code in (303, 200), r.text[:500]
    return c


def personal_token(c: httpx.Client) -> str:
    r = c.post("/account/tokens", data={"name": "laptop"})
    assert r.status_code == 201, r.text[:500]
    return re.search(r'id="new-token">([^<]+)<', r.text).group(1)


def last_json(text: str) -> dict:
    return json.loads(text)
