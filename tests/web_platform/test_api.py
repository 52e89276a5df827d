"""The web API with FastAPI's TestClient: the happy path to a stored Report, and every kind of bad
request answered with a clear 4xx JSON error (never a 500)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from web.app import create_app
from web.settings import Settings

from e2e.fake_grader import FIXTURES, PROBLEMS, quick

FIX = PROBLEMS / "901-toy-lru"
ACCEPTED = (FIX / "submissions/accepted/lru_plain_dict.py").read_text()
WRONG = (FIX / "submissions/wrong_answer/get_does_not_refresh.py").read_text()
TOKEN = "teacher-secret-token"


def make_settings(tmp_path: Path, **kw) -> Settings:
    kw.setdefault("instructor_token", TOKEN)
    return Settings(data_dir=tmp_path / "data", problems_dir=PROBLEMS,
                    reference_dir=FIXTURES / "reference", reaper_interval_s=0.2,
                    sse_poll_s=0.05, **kw)


@pytest.fixture
def client(tmp_path):
    app = create_app(make_settings(tmp_path), grader=quick, workers=1)
    with TestClient(app) as c:
        yield c


def wait_done(client, sid, timeout=30.0, headers=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(f"/api/submissions/{sid}", headers=headers or {}).json()
        if body["status"] == "done":
            return body
        time.sleep(0.05)
    raise AssertionError(f"submission {sid} not graded within {timeout} s: {body}")


def assert_error(resp, status, code=None):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"}, body
    assert body["error"]["message"], body
    if code:
        assert body["error"]["code"] == code, body
    return body["error"]


# ------------------------------------------------------------------ happy path


def test_submit_to_stored_report(client):
    r = client.post("/api/submissions", json={"problem": "901", "code": ACCEPTED})
    assert r.status_code == 202, r.text
    sid = r.json()["id"]
    assert r.json()["queue_position"] in (1, None)
    # Stored before the 202: the row is readable at once.
    first = client.get(f"/api/submissions/{sid}").json()
    assert first["status"] in ("queued", "running", "done")
    assert set(first) >= {"id", "status", "queue_position", "report"}
    done = wait_done(client, sid)
    assert done["report"]["verdict"] == "AC"
    assert done["verdict"] == "AC" and done["queue_position"] is None
    assert done["code"] == ACCEPTED
    mine = client.get("/api/submissions").json()["submissions"]
    assert [s["id"] for s in mine] == [sid]


def test_events_stream_until_done(client):
    sid = client.post("/api/submissions", json={"problem": "toy-lru", "code": WRONG + "\n# BUG"}).json()["id"]
    events = []
    with client.stream("GET", f"/api/submissions/{sid}/events") as s:
        assert s.headers["content-type"].startswith("text/event-stream")
        for line in s.iter_lines():
            if line.startswith("event: "):
                events.append(line[7:])
            if line.startswith("data: ") and events[-1] == "done":
                assert json.loads(line[6:])["verdict"] == "WA"
    assert events[0] == "queued" and events[-1] == "done"
    assert "running" in events and "test_finished" in events
    # Resuming after the last event id sends nothing twice.
    with client.stream("GET", f"/api/submissions/{sid}/events?after=1") as s:
        again = [ln[7:] for ln in s.iter_lines() if ln.startswith("event: ")]
    assert "queued" not in again and again[-1] == "done"


def test_problem_api_has_what_the_browser_needs(client):
    lst = client.get("/api/problems").json()["problems"]
    assert [p["id"] for p in lst] == ["901"]
    p = client.get("/api/problems/901").json()
    assert p["module"] == "lru"
    assert "public/test_basic.py" in p["public_tests"] and "public/helpers.py" in p["public_tests"]
    assert not any(k.startswith("hidden/") for k in p["public_tests"])
    assert set(p["handbook"]) == {"toy_store"}
    exp = p["public_expectations"]
    entry = exp["public/test_basic.py::test_eviction_order"]  # the judge's entry, as it is
    assert entry["outcome"] == "passed" and entry["observations"] == [
        {"label": "keys after putting c", "value": ["a", "c"]}, {"label": "evicted", "value": 1}]
    assert set(p["statement"]) == {"en", "zh"} and p["starter"].startswith("from toy_store")
    # The reference solution is never served.
    reference = (FIXTURES / "reference/toy_lru.py").read_text()
    assert "self.data.move_to_end(key)" in reference
    assert "move_to_end" not in json.dumps(p)


def test_bearer_identity_and_display_name(client):
    token = client.post("/api/visitors").json()["token"]
    api = {"Authorization": f"Bearer {token}"}
    r = client.post("/api/submissions", json={"problem": "901", "code": ACCEPTED}, headers=api)
    assert r.status_code == 202
    sid = r.json()["id"]
    wait_done(client, sid, headers=api)
    r = client.put("/api/me", json={"display_name": "  Ada   L. "}, headers=api)
    assert r.json()["display_name"] == "Ada L."
    assert client.get("/api/me", headers=api).json()["display_name"] == "Ada L."
    # The cookie visitor of this client is someone else.
    assert_error(client.get(f"/api/submissions/{sid}"), 404, "submission_not_found")
    assert_error(client.get("/api/me", headers={"Authorization": "Bearer short"}), 401, "bad_token")
    assert_error(client.get("/api/me", headers={"Authorization": "Basic abc"}), 401, "bad_token")


# ------------------------------------------------------------------ bad requests


def test_unknown_problem(client):
    e = assert_error(client.post("/api/submissions", json={"problem": "999", "code": "x = 1"}),
                     404, "unknown_problem")
    assert "999" in e["message"]
    assert_error(client.get("/api/problems/999"), 404, "unknown_problem")


def test_oversized_code(tmp_path):
    app = create_app(make_settings(tmp_path, max_code_bytes=1000), grader=quick)
    with TestClient(app) as c:
        e = assert_error(c.post("/api/submissions", json={"problem": "901", "code": "#" * 1001}),
                         413, "code_too_large")
        assert "1001" in e["message"] and "1000" in e["message"]
        # Far too large: refused from Content-Length before the body is read.
        assert_error(c.post("/api/submissions", json={"problem": "901", "code": "#" * 100_000}),
                     413, "body_too_large")
        assert c.post("/api/submissions", json={"problem": "901", "code": "#" * 999}).status_code == 202


def test_non_utf8_body(client):
    body = b'{"problem": "901", "code": "x = \xff\xfe"}'
    e = assert_error(client.post("/api/submissions", content=body,
                                 headers={"Content-Type": "application/json"}), 400, "not_utf8")
    assert "UTF-8" in e["message"]


def test_invalid_json_and_missing_fields(client):
    assert_error(client.post("/api/submissions", content=b"{not json",
                             headers={"Content-Type": "application/json"}), 400, "bad_json")
    e = assert_error(client.post("/api/submissions", json={"problem": "901"}), 422,
                     "invalid_request")
    assert "'code' is required" in e["message"]
    e = assert_error(client.post("/api/submissions", json={}), 422, "invalid_request")
    assert "'problem'" in e["message"] and "'code'" in e["message"]
    assert_error(client.post("/api/submissions", json={"problem": "901", "code": 5}), 422)
    assert_error(client.post("/api/submissions", json=["901", "x"]), 422)
    assert_error(client.post("/api/submissions", content=b"",
                             headers={"Content-Type": "application/json"}), 422)
    # A form post or plain text (what a cross-site form could send) is refused.
    assert_error(client.post("/api/submissions", content=b'{"problem": "901", "code": "x"}',
                             headers={"Content-Type": "text/plain"}), 415, "not_json")
    assert_error(client.post("/api/submissions", data={"problem": "901", "code": "x"}), 415)
    assert_error(client.post("/api/submissions", json={"problem": "901", "code": "  \n"}), 422,
                 "empty_code")
    assert_error(client.get("/api/submissions/abc"), 422, "invalid_request")


def test_someone_elses_submission(client, tmp_path):
    sid = client.post("/api/submissions", json={"problem": "901", "code": ACCEPTED}).json()["id"]
    other = TestClient(client.app)  # no cookie: another browser
    assert_error(other.get(f"/api/submissions/{sid}"), 404, "submission_not_found")
    assert_error(other.get(f"/api/submissions/{sid}/events"), 404, "submission_not_found")
    assert other.get("/api/submissions").json()["submissions"] == []
    page = other.get(f"/submissions/{sid}", headers={"Accept": "text/html"})
    assert page.status_code == 404 and ACCEPTED not in page.text
    assert_error(client.get("/api/submissions/424242"), 404, "submission_not_found")


def test_instructor_token(client, tmp_path):
    assert_error(client.get("/api/instructor/overview"), 401, "instructor_token_missing")
    assert_error(client.get("/api/instructor/overview", headers={"X-Instructor-Token": "nope"}),
                 403, "instructor_token_wrong")
    ok = client.get("/api/instructor/overview", headers={"X-Instructor-Token": TOKEN})
    assert ok.status_code == 200
    o = ok.json()
    assert set(o) >= {"queue", "workers", "recent", "problems"}
    assert o["workers"] and o["workers"][0]["status"] in ("idle", "grading")
    # The page: a login form, then the overview once the cookie is set.
    assert "Instructor token" in client.get("/instructor").text
    r = client.post("/instructor/login", content=b"token=nope",
                    headers={"Content-Type": "application/x-www-form-urlencoded"},
                    follow_redirects=False)
    assert r.headers["location"] == "/instructor?wrong=1"
    client.post("/instructor/login", content=f"token={TOKEN}".encode(),
                headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert "Workers" in client.get("/instructor").text
    # Instructor access off: a clear 403.
    app = create_app(make_settings(tmp_path / "off", instructor_token=None), grader=quick)
    with TestClient(app) as c:
        e = assert_error(c.get("/api/instructor/overview", headers={"X-Instructor-Token": TOKEN}),
                         403, "instructor_disabled")
        assert "KVPRACTICE_INSTRUCTOR_TOKEN" in e["message"]


def test_rate_limit_and_queued_cap(tmp_path):
    # No workers: everything stays queued.
    app = create_app(make_settings(tmp_path, max_queued_per_visitor=2, rate_limit_count=3),
                     grader=quick, workers=0)
    with TestClient(app) as c:
        for _ in range(2):
            assert c.post("/api/submissions", json={"problem": "901", "code": "x = 1"}).status_code == 202
        r = c.post("/api/submissions", json={"problem": "901", "code": "x = 1"})
        e = assert_error(r, 429, "too_many_queued")
        assert "Retry-After" in r.headers and "2" in e["message"]
        d = c.get("/api/submissions/2").json()
        assert d["queue_position"] == 2
    app = create_app(make_settings(tmp_path / "b", max_queued_per_visitor=99, rate_limit_count=3),
                     grader=quick, workers=0)
    with TestClient(app) as c:
        for _ in range(3):
            assert c.post("/api/submissions", json={"problem": "901", "code": "x = 1"}).status_code == 202
        r = c.post("/api/submissions", json={"problem": "901", "code": "x = 1"})
        assert_error(r, 429, "rate_limited")
        assert int(r.headers["Retry-After"]) >= 1


def test_unknown_routes_and_methods_are_json(client):
    assert_error(client.get("/api/nothing"), 404, "not_found")
    assert_error(client.delete("/api/submissions"), 405, "method_not_allowed")


def test_openapi_documents_the_api(client):
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    for p in ("/api/problems", "/api/problems/{problem_id}", "/api/submissions",
              "/api/submissions/{submission_id}", "/api/submissions/{submission_id}/events",
              "/api/visitors", "/api/me", "/api/instructor/overview"):
        assert p in paths, p
    post = paths["/api/submissions"]["post"]
    schema = post["requestBody"]["content"]["application/json"]["schema"]
    assert set(schema["required"]) == {"problem", "code"}
    assert {"202", "404", "413", "422", "429"} <= set(post["responses"])
    assert not any(p.startswith("/problems") for p in paths)  # pages are not API


# ------------------------------------------------------------------ pages


def test_pages_render(client):
    sid = client.post("/api/submissions", json={"problem": "901", "code": WRONG + "# BUG"}).json()["id"]
    wait_done(client, sid)
    home = client.get("/")
    assert home.status_code == 200 and "Toy LRU store" in home.text and ">WA<" in home.text
    page = client.get("/problems/901")
    assert page.status_code == 200
    assert '<pre class="hl">' in page.text and "它继承" in page.text
    assert "The server&#39;s verdict is the one that counts" in page.text or \
        "The server's verdict is the one that counts" in page.text
    zh = client.get("/problems/901?lang=zh")
    assert "以服务器的判定为准" in zh.text and "kvp_lang=zh" in zh.headers.get("set-cookie", "")
    assert client.get(f"/submissions/{sid}").status_code == 200
    hist = client.get("/submissions")
    assert f"/submissions/{sid}" in hist.text
    assert client.get("/problems/901/starter.py").text.startswith("from toy_store")
    missing = client.get("/problems/999", headers={"Accept": "text/html"})
    assert missing.status_code == 404 and "999" in missing.text
    assert client.get("/assets/pygments.css").status_code == 200


def test_real_grading_core(tmp_path):
    """The default grader is the grading core: a wrong answer gets WA with its divergence."""
    judge = pytest.importorskip("judge.grading.grader", reason="the grading core is not in this tree")
    del judge
    app = create_app(make_settings(tmp_path), workers=1)
    with TestClient(app) as c:
        sid = c.post("/api/submissions", json={"problem": "901", "code": WRONG}).json()["id"]
        report = wait_done(c, sid, timeout=180)["report"]
    assert report["verdict"] == "WA", report
    assert report["first_failure"]["test"] == "public/test_basic.py::test_eviction_order"
    assert report["first_failure"]["expected"] == ["a", "c"]
    assert report["first_failure"]["got"] == ["b", "c"]


@pytest.mark.slow
def test_instructor_runs_judge_check(client):
    pytest.importorskip("judge.authoring.check", reason="the grading core is not in this tree")
    hdr = {"X-Instructor-Token": TOKEN}
    assert_error(client.post("/api/instructor/problems/901/check"), 401)
    assert_error(client.post("/api/instructor/problems/999/check", headers=hdr), 404)
    r = client.post("/api/instructor/problems/901/check", headers=hdr)
    assert r.status_code == 202 and r.json()["started"]
    deadline = time.monotonic() + 300
    while True:
        (p,) = client.get("/api/instructor/overview", headers=hdr).json()["problems"]
        if p["judge_check"] and p["judge_check"]["state"] == "done":
            break
        assert time.monotonic() < deadline, "judge check did not finish"
        time.sleep(0.5)
    jc = p["judge_check"]
    assert jc["ok"], jc
    assert {r["submission"] for r in jc["table"]} >= {
        "reference", "starter", "accepted/lru_plain_dict.py",
        "wrong_answer/get_does_not_refresh.py"}
    client.post("/instructor/login", content=f"token={TOKEN}".encode(), headers={
        "Content-Type": "application/x-www-form-urlencoded", "Origin": "http://testserver"})
    assert "pass" in client.get("/instructor").text


def test_serve_refuses_without_the_front_end_build(monkeypatch, capsys):
    import web.app
    from web import cli
    monkeypatch.setattr(web.app, "front_end_build",
                        lambda: {"ok": False, "missing": ["web/static/dist/problem.js"]})
    assert cli.main(["serve", "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert "web/static/dist/problem.js" in err and "bash scripts/build_frontend.sh" in err
