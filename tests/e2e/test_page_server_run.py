"""Run on a problem the page cannot run itself (its tests import numpy: an imported handbook
problem, `browser = false`): a practice run on the server. The page says so above the report
(not stored, no score), and Run shows the server's verdict for the code in the editor.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from judge.cli.main import main as judge_main

from e2e.test_browser import _paste, serving
from e2e.waits import run_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

BOOK = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_more"
PRACTICE = "Practice run on the server: the public tests only, not stored, no score."


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    problems = tmp_path_factory.mktemp("problems")
    assert judge_main(["import", str(BOOK), "--problems", str(problems), "--no-check"]) == 0
    with serving(tmp_path_factory.mktemp("web-data"), problems) as base:
        yield base


def test_a_practice_run_on_the_server_says_so_above_its_report(server, browser):
    pid = "900"  # numeric/row-norms: the importer numbers the folders in order, from 900
    problem = json.loads(urllib.request.urlopen(f"{server}/api/problems/{pid}").read())
    assert problem["browser"] is False  # numpy: Run goes to the server
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/problems/{pid}?lang=en")
    page.wait_for_selector("#run:not([disabled])", timeout=60_000)
    for source, verdict in [((BOOK / "numeric/row-norms/starter.py").read_text(), "not AC"),
                            ((BOOK / "numeric/row-norms/solution.py").read_text(), "AC")]:
        _paste(page, source)
        run_and_wait(page, timeout=240_000)
        box = page.locator('.run-result[data-origin="server"][data-done="1"]')
        assert box.locator(".practice-run").inner_text() == PRACTICE
        # the notice comes first, the report under it
        assert box.locator(":scope > *").first.get_attribute("class") == "banner info practice-run"
        # issue 30 item 15: it was labelled "server verdict", which a practice run is not
        assert box.locator(".report-head .origin").inner_text() == \
            "practice run on the server (public tests, not stored)"
        got = box.locator(".report-head .verdict").inner_text()
        assert (got == "AC") == (verdict == "AC"), got
    assert errors == []
    page.close()
