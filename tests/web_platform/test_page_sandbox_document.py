"""The page's Python sandbox as the server sends it (issue 28 item 2): the frame's document holds
its script inline and nothing else, and its policy sandboxes it whatever frames it, allows that
one script by its hash, blobs and eval for the worker, and no request of any kind; only this
server's pages may frame it. The problem page names the frame and publishes the digests of the
build's snapshot, the only snapshot the page restores. The attack in the browser is
tests/e2e/test_page_sandbox.py."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re

import pytest
from fastapi.testclient import TestClient

from web.app import create_app, front_end_build
from web.http.headers import PAGE_POLICY, sandbox_policy
from web.settings import STATIC_DIR

from e2e.fake_grader import quick
from web_platform.test_api import make_settings

BUILD = front_end_build()
pytestmark = pytest.mark.skipif(not BUILD["sandbox_script"], reason="the front end is not built")


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    app = create_app(make_settings(tmp_path_factory.mktemp("sandbox")), grader=quick, workers=0)
    with TestClient(app) as c:
        yield c


def _directives(policy: str) -> dict:
    return {d.split()[0]: d.split()[1:] for d in (p.strip() for p in policy.split(";")) if d}


def test_the_frame_is_its_inline_script_allowed_by_hash_and_no_network(client):
    r = client.get(BUILD["sandbox_url"], headers={"accept-encoding": "gzip"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.headers["content-encoding"] == "gzip"  # made once, not on every restart
    (script,) = re.findall(r"<script>(.*?)</script>", r.text, re.S)
    assert script == (STATIC_DIR / "dist" / "sandbox_frame.js").read_text(encoding="utf-8")
    # the worker's script is text beside it, read back exactly (the frame starts it from a blob)
    (worker,) = re.findall(r'<div hidden id="worker-script">(.*?)</div>', r.text, re.S)
    assert html.unescape(worker) == (STATIC_DIR / "dist" / "worker.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = _directives(r.headers["content-security-policy"])
    assert csp["default-src"] == ["'none'"] and csp["connect-src"] == ["'none'"]
    assert csp["script-src"] == [f"'sha256-{digest}'", "blob:", "'unsafe-eval'", "'wasm-unsafe-eval'"]
    assert csp["worker-src"] == ["blob:"] and csp["form-action"] == ["'none'"]
    # sandboxed even if framed without the attribute, or opened on its own
    assert csp["sandbox"] == ["allow-scripts"]
    assert csp["frame-ancestors"] == ["'self'"] and r.headers["x-frame-options"] == "SAMEORIGIN"
    assert r.headers["content-security-policy"] == sandbox_policy(f"sha256-{digest}")


def test_every_other_path_keeps_its_own_policy(client):
    for path in ("/sandbox/python/x", "/sandbox", "/problems/901"):
        r = client.get(path)
        assert r.headers["x-frame-options"] == "DENY", path
        assert "sandbox allow-scripts" not in r.headers["content-security-policy"], path
    page = _directives(PAGE_POLICY)
    assert page["worker-src"] == ["'none'"] and page["frame-src"] == ["'self'"]


def test_the_problem_page_names_the_frame_and_publishes_the_snapshot(client):
    page = client.get("/problems/901").text
    config = json.loads(re.search(r'<script type="application/json" id="config">(.*?)</script>',
                                  page, re.S).group(1))
    assert config["sandbox"] == BUILD["sandbox_url"]
    frame = re.search(r'<iframe id="py-sandbox"[^>]*>', page).group(0)
    assert 'sandbox="allow-scripts"' in frame and BUILD["sandbox_url"] in frame
    snap = config["snapshot"]
    if snap is None:
        pytest.skip("the build made no snapshot")
    for part in ("memory", "files"):
        path = STATIC_DIR / snap[part].removeprefix("/static/")
        assert hashlib.sha256(path.read_bytes()).hexdigest() == snap[f"{part}_sha256"], part
    assert snap["memory"].endswith(f"/{snap['name']}.memory")
