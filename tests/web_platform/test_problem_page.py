"""What the problem page needs from the server for issue 12: the public tests' code (the Tests
tab), the chapter's experiment (the chart), Run's shorter default limit, and the page's separate
Run / Submit panels, Stop button and tabs in the HTML."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from web.app import create_app
from web.settings import REPO_ROOT, Settings

from e2e.fake_grader import quick

P143 = REPO_ROOT / "problems" / "143-tiered-kv-cache"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    app = create_app(Settings(data_dir=tmp_path_factory.mktemp("data")), grader=quick, workers=1)
    with TestClient(app) as c:
        yield c


def test_problem_api_serves_public_test_code_and_the_experiment(client):
    api = client.get("/api/problems/143").json()
    on_disk = (P143 / "tests/public/test_examples.py").read_text()
    assert api["public_tests"]["public/test_examples.py"] == on_disk
    assert not any(name.startswith("hidden/") for name in api["public_tests"])
    exp = api["experiment"]
    committed = json.loads((P143 / "experiment.json").read_text())
    runs = [r["run"] for r in exp["reference"]]
    assert runs == [r["run"] for r in committed["reference"]] and len(runs) == 3
    assert all(isinstance(v, int) for r in exp["reference"] for v in r["per_turn"])
    assert exp["yours"] is None


def test_problem_page_has_tabs_stop_and_separate_panels(client):
    html = client.get("/problems/143?lang=en").text
    assert 'id="tab-tests"' in html and 'id="tests-pane"' in html and 'role="tablist"' in html
    assert 'id="stop"' in html and 'id="experiment"' in html
    # Run's panel and Submit's are distinct elements, Submit's first.
    assert html.index('id="submit-results"') < html.index('id="results"')
    config = json.loads(re.search(r'<script type="application/json" id="config">(.*?)</script>',
                                  html, re.S).group(1))
    assert config["timeout_s"] <= 15, "Run's default limit is short: Stop ends a Run sooner"
