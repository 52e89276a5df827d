"""Issue 20's web attacks, each performed and its contained outcome asserted: framing the pages
(10), forging X-Forwarded-For from loopback (12), control characters in display names (13), and
ids no database holds on page routes (15)."""

from __future__ import annotations

import argparse
import socket
import threading
import time

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

from web.app import create_app
from web.cli import uvicorn_options
from web.ops_cli import print_regrade
from web.services.names import terminal_safe

from e2e.fake_grader import quick
from web_platform.test_api import ACCEPTED, TOKEN, assert_error, make_settings


@pytest.fixture
def client(tmp_path):
    with TestClient(create_app(make_settings(tmp_path), grader=quick, workers=0)) as c:
        yield c


# ------------------------------------------------------------------ 10: clickjacking


def test_every_response_refuses_to_be_framed(client):
    answers = {
        "page": client.get("/problems/901"),
        "error page": client.get("/submissions/5", headers={"Accept": "text/html"}),
        "api": client.get("/api/problems"),
        "api error": client.get("/api/submissions/5"),
        "edge refusal": client.post("/api/submissions", content=b"x" * 10**7,
                                    headers={"Content-Type": "application/json"}),
        "instructor login page": client.get("/instructor"),
    }
    for what, r in answers.items():
        assert r.headers["x-frame-options"] == "DENY", what
        csp = r.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in csp, (what, csp)
    assert answers["edge refusal"].status_code == 413
    page = answers["page"].headers["content-security-policy"]
    # the page's own scripts and the Pyodide worker's WebAssembly run; no eval, no other origin
    assert "script-src 'self' 'wasm-unsafe-eval'" in page and "'unsafe-eval'" not in page
    assert "object-src 'none'" in page and "base-uri 'none'" in page
    assert answers["api"].headers["content-security-policy"].startswith("default-src 'none'")


# ------------------------------------------------------------------ 12: forwarded addresses


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_forged_forwarded_for_from_loopback_is_not_believed(tmp_path):
    """Through uvicorn as `judge serve` runs it: four submissions from 127.0.0.1, each claiming
    another X-Forwarded-For, meet the per-address queue cap of 2 as one address."""
    app = create_app(make_settings(tmp_path, max_queued_per_address=2), grader=quick, workers=0)
    args = argparse.Namespace(host="127.0.0.1", port=_free_port(), log_level="warning")
    options = uvicorn_options(args)
    assert options["proxy_headers"] is False
    server = uvicorn.Server(uvicorn.Config(app, **options))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    try:
        base = f"http://127.0.0.1:{args.port}"
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        codes = []
        for i in range(4):
            r = httpx.post(base + "/api/submissions", json={"problem": "901", "code": ACCEPTED},
                           headers={"Authorization": f"Bearer forged-visitor-token-{i:04d}",
                                    "X-Forwarded-For": f"203.0.113.{i + 1}"}, timeout=30)
            codes.append(r.status_code)
        assert codes == [202, 202, 429, 429], codes
        assert r.json()["error"]["code"] == "too_many_queued_address"
    finally:
        server.should_exit = True
        t.join(15)


def test_forwarded_for_is_believed_only_from_configured_proxies(tmp_path):
    # TestClient's connections come from "testclient": configured as the proxy, its word counts
    settings = make_settings(tmp_path, max_queued_per_address=1,
                             forwarded_allow_ips="testclient")
    with TestClient(create_app(settings, grader=quick, workers=0)) as c:
        for i in range(3):
            r = c.post("/api/submissions", json={"problem": "901", "code": ACCEPTED},
                       headers={"Authorization": f"Bearer proxied-visitor-token-{i:04d}",
                                "X-Forwarded-For": f"198.51.100.{i + 1}"})
            assert r.status_code == 202, r.text  # three students behind the proxy


def test_wrong_tokens_from_another_address_do_not_lock_the_instructor_out(tmp_path):
    settings = make_settings(tmp_path, forwarded_allow_ips="testclient")
    with TestClient(create_app(settings, grader=quick, workers=0)) as c:
        for i in range(12):  # a student "at" the instructor's address guesses on
            c.get("/api/instructor/overview", headers={"X-Instructor-Token": f"guess-{i}",
                                                       "X-Forwarded-For": "192.0.2.7"})
        assert_error(c.get("/api/instructor/overview", headers={
            "X-Instructor-Token": "guess-again", "X-Forwarded-For": "192.0.2.7"}), 429)
        for where in ("192.0.2.7", "192.0.2.8"):
            r = c.get("/api/instructor/overview", headers={"X-Instructor-Token": TOKEN,
                                                           "X-Forwarded-For": where})
            assert r.status_code == 200, (where, r.text)


# ------------------------------------------------------------------ 13: names


def test_control_characters_in_display_names_are_refused_by_both_forms(client):
    bad = "Ada\x1b[2J\x1b[1;1Hregrade approved"
    assert_error(client.put("/api/me", json={"display_name": bad}), 422, "bad_display_name")
    assert_error(client.put("/api/me", json={"display_name": "Ada\u202egnp.exe"}), 422,
                 "bad_display_name")  # a bidirectional override is not printable either
    r = client.post("/me", content=f"display_name={bad}".encode(),
                    headers={"Content-Type": "application/x-www-form-urlencoded",
                             "Origin": "http://testserver"}, follow_redirects=False)
    assert r.status_code == 422, r.text
    assert client.get("/api/me").json()["display_name"] is None
    r = client.post("/me", content=b"display_name=Ada%20%20Lovelace",
                    headers={"Content-Type": "application/x-www-form-urlencoded",
                             "Origin": "http://testserver"}, follow_redirects=False)
    assert r.status_code == 303
    assert client.get("/api/me").json()["display_name"] == "Ada Lovelace"


def test_regrade_prints_names_escaped(capsys):
    name = "Eve\x1b[2J\x1b[1;1H\rfake line\x07"
    print_regrade({"items": [{"display_name": name, "visitor": 3, "submission": 7,
                              "old": {"verdict": "WA"}, "new": {"verdict": "AC", "status": "done"},
                              "change": "WA -> AC"}],
                   "changes": {"WA -> AC": 1}, "graded": 1, "total": 1, "changed": 1,
                   "state": "graded", "status": "pending", "id": 1})
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "Eve\\x1b[2J\\x1b[1;1H\\rfake line\\x07" in out
    assert terminal_safe("Zoë 张") == "Zoë 张"  # printable words stay as they are


# ------------------------------------------------------------------ 15: ids on page routes


def test_ids_no_database_holds_are_404_on_pages(client):
    for sid in ("100000000000000000000000", "2147483648", "0", "-1"):
        r = client.get(f"/submissions/{sid}", headers={"Accept": "text/html"})
        assert r.status_code == 404, (sid, r.status_code)
