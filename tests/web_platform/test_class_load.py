"""A class behind one address: 50 signed-in students submit within one second to a server on
loopback (a quick stand-in grader); all 50 are queued, told their position and graded right,
none refused (anonymous visitors from one address would hit the address caps)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import httpx
import pytest
import uvicorn

from web.accounts import service, sessions
from web.app import create_app

from e2e.fake_grader import quick
from web_platform.test_api import ACCEPTED, make_settings

pytestmark = pytest.mark.slow
N = 50


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_fifty_signed_in_students_behind_one_address(tmp_path):
    settings = make_settings(tmp_path)
    app = create_app(settings, grader=quick, workers=4)
    port = _port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    try:
        db = app.state.ctx.db
        cookies = []
        for i in range(N):
            a = service.create_account(db, settings, f"student{i:02d}", "pw-for-the-test-1")
            cookies.append(sessions.open_session(db, settings, a.id))
        # half of them submit the known bug: each verdict must be its own
        codes = [ACCEPTED + ("\n# BUG" if i % 2 else "") for i in range(N)]

        async def burst():
            async with httpx.AsyncClient(base_url=base, timeout=60) as c:
                t0 = time.monotonic()
                rs = await asyncio.gather(*[
                    c.post("/api/submissions", json={"problem": "901", "code": code},
                           headers={"Origin": base, "Cookie": f"kvp_session={ck}"})
                    for ck, code in zip(cookies, codes)])
                return rs, time.monotonic() - t0

        responses, took = asyncio.run(burst())
        assert [r.status_code for r in responses] == [202] * N, [r.text for r in responses
                                                                 if r.status_code != 202][:3]
        positions = [r.json()["queue_position"] for r in responses]
        assert all(p is None or p >= 1 for p in positions)
        ids = [r.json()["id"] for r in responses]
        assert len(set(ids)) == N
        verdicts = {}
        end = time.monotonic() + 120
        with httpx.Client(base_url=base, timeout=30) as c:
            while len(verdicts) < N and time.monotonic() < end:
                for sid, ck in zip(ids, cookies):
                    if sid in verdicts:
                        continue
                    body = c.get(f"/api/submissions/{sid}",
                                 headers={"Cookie": f"kvp_session={ck}"}).json()
                    if body["status"] == "done":
                        verdicts[sid] = body["verdict"]
                time.sleep(0.1)
        assert len(verdicts) == N, f"{N - len(verdicts)} not graded"
        assert [verdicts[sid] for sid in ids] == ["WA" if i % 2 else "AC" for i in range(N)]
        print(f"\n{N} submissions from one address accepted in {took:.2f} s, all graded")
    finally:
        server.should_exit = True
        thread.join(15)
