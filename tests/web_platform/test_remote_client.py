"""`practice/judge.py test N --remote URL`: the API client submits, follows the events and returns
the server's Report; errors come back as the server's own words."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fastapi.testclient import TestClient
from paths import REPO

from web.app import create_app
from web.client import PlatformClient, RemoteError

from e2e.fake_grader import quick
from web_platform.test_api import ACCEPTED, WRONG, make_settings


@pytest.fixture
def http(tmp_path):
    app = create_app(make_settings(tmp_path), grader=quick, workers=1)
    with TestClient(app) as c:
        yield c


def test_submit_follow_and_report(http, tmp_path):
    tokens = tmp_path / "tokens.json"
    client = PlatformClient("http://testserver", token_file=tokens, http=http)
    events = []
    sid = client.submit("901", WRONG + "\n# BUG")  # the quick grader answers WA to a BUG marker
    report = client.follow(sid, on_event=events.append)
    assert report["verdict"] == "WA" and report["schema_version"] == 1
    finished = [e for e in events if e["type"] == "test_finished"]
    assert finished and {e["test"] for e in finished} == {t["name"] for t in report["tests"]}
    assert not any(e["type"] == "done" for e in events)

    # The token is kept per server: a second client is the same visitor and sees the submission.
    again = PlatformClient("http://testserver", token_file=tokens, http=http)
    assert again.token() == client.token()
    assert again.report(sid)["verdict"] == "WA"
    assert again.follow(again.submit("901", ACCEPTED))["verdict"] == "AC"


def test_someone_elses_submission_and_unknown_problem(http, tmp_path):
    mine = PlatformClient("http://testserver", token_file=tmp_path / "a.json", http=http)
    theirs = PlatformClient("http://testserver", token_file=tmp_path / "b.json", http=http)
    sid = mine.submit("901", ACCEPTED)
    with pytest.raises(RemoteError, match="404"):
        theirs.report(sid)
    with pytest.raises(RemoteError, match="unknown_problem"):
        mine.submit("999", ACCEPTED)


def test_cli_says_when_the_server_is_unreachable(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "KVPRACTICE_WORKSPACE": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(REPO / "practice" / "judge.py"), "test", "143",
                           str(REPO / "reference" / "tiered.py"), "--remote", "http://127.0.0.1:9"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert "cannot reach http://127.0.0.1:9" in proc.stderr
