"""Attacks on the server's edge, each performed and its contained outcome asserted: oversized and
unauthenticated bodies, event-stream floods, self-made identities, cross-origin instructor
actions, token guessing, and malformed input that once gave a 5xx."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from web.app import create_app

from e2e.fake_grader import quick
from web_platform.test_api import ACCEPTED, TOKEN, assert_error, make_settings, wait_done

WORKER_TOKEN = "worker-secret-token-0123"


def bearer(i: int) -> dict:
    return {"Authorization": f"Bearer visitor-token-number-{i:04d}"}


@pytest.fixture
def app(tmp_path):
    return create_app(make_settings(tmp_path, worker_token=WORKER_TOKEN), grader=quick, workers=0)


@pytest.fixture
def client(app):
    with TestClient(app) as c:
        yield c


def submit(client, headers, code=ACCEPTED):
    return client.post("/api/submissions", json={"problem": "901", "code": code}, headers=headers)


# ------------------------------------------------------------------ bodies


def test_unauthenticated_body_is_refused_before_it_is_read(client):
    sent = []

    def body():
        for _ in range(64):  # 64 MB if anyone read it all
            sent.append(1)
            yield b"x" * (1 << 20)

    r = client.post("/api/workers/heartbeat", content=body(),
                    headers={"Content-Type": "application/json"})
    assert_error(r, 401, "worker_token_missing")
    assert len(sent) <= 2, f"{len(sent)} MB of an unauthenticated body were read"
    r = client.post("/api/workers/heartbeat", content=b"{}",
                    headers={"Content-Type": "application/json", "X-Worker-Token": "wrong" * 5})
    assert_error(r, 403, "worker_token_wrong")


def test_body_over_the_route_limit_is_413(client):
    big = b'{"problem": "901", "code": "' + b"x" * (1 << 20) + b'"}'
    assert_error(client.post("/api/submissions", content=big, headers={
        "Content-Type": "application/json", **bearer(1)}), 413, "body_too_large")
    # Chunked, so no Content-Length to judge by: refused once the stream passes the limit.
    def chunks():
        for _ in range(32):
            yield b"x" * (64 * 1024)

    r = client.post("/api/workers/heartbeat", content=chunks(), headers={
        "Content-Type": "application/json", "X-Worker-Token": WORKER_TOKEN})
    assert_error(r, 413, "body_too_large")
    assert_error(client.put("/api/me", content=b"{}", headers={
        "Content-Type": "application/json", "Content-Length": "abc", **bearer(1)}), 400)


# ------------------------------------------------------------------ event streams


def test_event_streams_are_capped_per_visitor_and_released(tmp_path):
    app = create_app(make_settings(tmp_path), grader=quick, workers=1)
    with TestClient(app) as client:
        sid = submit(client, bearer(1)).json()["id"]
        wait_done(client, sid, headers=bearer(1))
        slots = app.state.ctx.limits.streams
        # A finished submission's stream ends by itself and gives its slot back.
        r = client.get(f"/api/submissions/{sid}/events", headers=bearer(1))
        assert r.status_code == 200 and "event: done" in r.text
        assert slots.open_count() == 0
        # A Last-Event-ID no database column can hold is read as "from the start".
        r = client.get(f"/api/submissions/{sid}/events",
                       headers={"Last-Event-ID": "9" * 400, **bearer(1)})
        assert r.status_code == 200 and "event: done" in r.text and slots.open_count() == 0
        visitor = str(client.get("/api/me", headers=bearer(1)).json()["visitor_id"])
        for _ in range(slots.per_visitor):  # the visitor's streams, held open elsewhere
            assert slots.try_open(visitor, "elsewhere") is None
        e = assert_error(client.get(f"/api/submissions/{sid}/events", headers=bearer(1)), 429,
                         "too_many_streams")
        assert "visitor" in e["message"]
        # Unrelated requests are not held up meanwhile.
        assert client.get("/api/problems").status_code == 200


# ------------------------------------------------------------------ identities and queues


def test_new_tokens_do_not_escape_the_per_address_limit(tmp_path):
    settings = make_settings(tmp_path, rate_limit_per_address=3)
    with TestClient(create_app(settings, grader=quick, workers=0)) as client:
        for i in range(3):
            assert submit(client, bearer(i)).status_code == 202
        r = submit(client, bearer(99))
        assert_error(r, 429, "rate_limited_address")
        assert int(r.headers["Retry-After"]) >= 1


def test_new_tokens_do_not_escape_the_per_address_queue_cap(tmp_path):
    settings = make_settings(tmp_path, max_queued_per_address=3)
    with TestClient(create_app(settings, grader=quick, workers=0)) as client:
        accepted = [submit(client, bearer(i)).status_code for i in range(40)]
        assert accepted.count(202) == 3
        r = submit(client, bearer(99))
        assert_error(r, 429, "too_many_queued_address")


def test_one_problem_queue_has_a_ceiling(tmp_path):
    settings = make_settings(tmp_path, max_queued_per_problem=2)
    with TestClient(create_app(settings, grader=quick, workers=0)) as client:
        assert submit(client, bearer(1)).status_code == 202
        assert submit(client, bearer(2)).status_code == 202
        r = submit(client, bearer(3))
        assert_error(r, 429, "queue_full")
        assert r.headers["Retry-After"] == "60"


# ------------------------------------------------------------------ instructors


def test_cookie_instructor_action_from_another_origin_is_refused(client):
    # the instructor's page session (an opaque id, web.accounts.sessions), as a browser has it
    client.post("/instructor/login", content=f"token={TOKEN}".encode(), headers={
        "Content-Type": "application/x-www-form-urlencoded", "Origin": "http://testserver"})
    assert client.cookies.get("kvp_session") and TOKEN not in client.cookies.get("kvp_session")
    url = "/api/instructor/regrades/1/approve"
    own = "http://testserver"
    e = assert_error(client.post(url, headers={"Origin": "http://testserver:8001"}), 403,
                     "cross_origin")
    assert "8001" in e["message"]
    assert_error(client.post(url), 403, "cross_origin")  # a cookie alone proves nothing
    # From the server's own page (Origin or Referer) it reaches the route: no such regrade.
    assert client.post(url, headers={"Origin": own}).status_code == 404
    assert client.post(url, headers={"Referer": own + "/instructor"}).status_code == 404
    # The header token is not sent by browsers on their own: no origin needed.
    client.cookies.clear()
    assert client.post(url, headers={"X-Instructor-Token": TOKEN}).status_code == 404
    # A visitor-cookie request from another origin is refused too.
    client.cookies.set("kvp_visitor", "a-visitor-cookie-token-123")
    assert_error(client.put("/api/me", json={"display_name": "x"},
                            headers={"Origin": "http://evil.example"}), 403, "cross_origin")


def test_wrong_instructor_tokens_are_throttled(app, client):
    guesses = app.state.ctx.limits.instructor_guesses
    now = [1000.0]
    guesses.clock = lambda: now[0]
    for i in range(guesses.free):
        assert_error(client.get("/api/instructor/overview",
                                headers={"X-Instructor-Token": f"guess-{i}"}), 403)
    r = client.get("/api/instructor/overview", headers={"X-Instructor-Token": "guess-x"})
    assert_error(r, 429, "too_many_wrong_tokens")  # the next guess waits its turn
    assert int(r.headers["Retry-After"]) >= 1
    # ... but the right token is never refused: whoever shares the address (a classroom behind
    # one NAT) cannot lock the instructor out by guessing
    assert client.get("/api/instructor/overview", headers={"X-Instructor-Token": TOKEN}
                      ).status_code == 200
    now[0] += 1.5
    assert_error(client.get("/api/instructor/overview", headers={"X-Instructor-Token": "guess-y"}),
                 403)  # looked at again once the wait is over; the next wait is longer
    now[0] += 1.5
    assert_error(client.get("/api/instructor/overview", headers={"X-Instructor-Token": "guess-z"}),
                 429)


# ------------------------------------------------------------------ malformed input


def test_malformed_input_is_4xx(client):
    deep = b'{"problem": "901", "code": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert_error(client.post("/api/submissions", content=deep, headers={
        "Content-Type": "application/json", **bearer(1)}), 400, "bad_json")
    lone = b'{"problem": "901", "code": "x = 1  # \\ud800"}'
    assert_error(client.post("/api/submissions", content=lone, headers={
        "Content-Type": "application/json", **bearer(1)}), 422, "bad_code")
    for path in ("/api/submissions/10000000000000000000000", "/api/submissions/0",
                 "/api/submissions/-5", "/api/instructor/submissions/99999999999999",
                 "/api/instructor/regrades/10000000000000000000000"):
        r = client.get(path, headers={"X-Instructor-Token": TOKEN})
        assert r.status_code == 422, (path, r.status_code, r.text)
