"""The way of a submission in embedded mode: the grading thread's commits wake the event stream
(no polling needed), and the stream ends with exactly one `done`, which carries the Report."""

from __future__ import annotations

import json
import threading

import pytest
from fastapi.testclient import TestClient

from web.app import create_app
from web.services import events as event_stream

from e2e.fake_grader import quick
from web_platform.test_api import ACCEPTED, make_settings


def core_like(problem, source, on_event) -> dict:
    """The fake grader, announcing its end the way the grading core does (its own "done")."""
    report = quick(problem, source, on_event)
    on_event({"type": "done", "verdict": report["verdict"], "score": report["score"]})
    return report


def read_stream(client, url, out: list, headers=None) -> None:
    kind = None
    with client.stream("GET", url, headers=headers or {}) as s:
        for line in s.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                out.append((kind, json.loads(line[6:])))


def follow(client, url, timeout_s=60.0, headers=None) -> list:
    """The whole stream, read in a thread so that a stream that never ends fails the test."""
    out: list = []
    t = threading.Thread(target=read_stream, args=(client, url, out, headers), daemon=True)
    t.start()
    t.join(timeout_s)
    assert not t.is_alive(), f"the stream did not end; it sent {[k for k, _ in out]}"
    return out


@pytest.fixture
def client(tmp_path, monkeypatch):
    # With no poll to fall back on, only the in-process wake-up can move the stream on.
    monkeypatch.setattr(event_stream, "OTHER_WRITERS_S", 3600.0)
    app = create_app(make_settings(tmp_path), grader=core_like, workers=1)
    with TestClient(app) as c:
        yield c


def test_embedded_stream_ends_with_one_done_carrying_the_report(client):
    sid = client.post("/api/submissions", json={"problem": "901", "code": ACCEPTED}).json()["id"]
    events = follow(client, f"/api/submissions/{sid}/events")
    kinds = [k for k, _ in events]
    assert kinds[0] == "queued" and "running" in kinds and "test_finished" in kinds, kinds
    assert kinds.count("done") == 1 and kinds[-1] == "done", kinds
    done = events[-1][1]
    stored = client.get(f"/api/submissions/{sid}").json()
    assert stored["status"] == "done"
    assert done["report"] == stored["report"] and done["report"]["verdict"] == "AC"
    assert done["verdict"] == "AC" and done["score"] == 1.0
    # a stream opened after the end replays the record, with the same one done
    again = follow(client, f"/api/submissions/{sid}/events")
    assert [k for k, _ in again] == kinds and again[-1][1]["report"] == stored["report"]


def test_resumed_stream_after_the_last_event_sends_only_done(client):
    sid = client.post("/api/submissions", json={"problem": "901", "code": ACCEPTED}).json()["id"]
    events = follow(client, f"/api/submissions/{sid}/events")
    assert events[-1][0] == "done"
    # Last-Event-ID of the event before done: the resumed stream sends done (and the report) only
    with client.stream("GET", f"/api/submissions/{sid}/events") as s:
        ids = [int(line[4:]) for line in s.iter_lines() if line.startswith("id: ")]
    tail = follow(client, f"/api/submissions/{sid}/events", headers={"Last-Event-ID": str(ids[-2])})
    assert [k for k, _ in tail] == ["done"] and tail[0][1]["report"]["verdict"] == "AC"


def test_news_wakes_only_the_streams_that_follow(client):
    news = client.app.state.ctx.db.news
    assert news.waiting() == 0  # no stream open, nobody subscribed
    sid = client.post("/api/submissions", json={"problem": "901", "code": ACCEPTED}).json()["id"]
    follow(client, f"/api/submissions/{sid}/events")
    assert news.waiting() == 0  # an ended stream unsubscribes
