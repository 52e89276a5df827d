"""A C++ problem's page in a browser (issue 31): CodeMirror runs its C++ mode (the content's
data-language is CodeMirror's own, set by the language the editor was built with), the page
starts no Python, and Run is a practice run on the server that shows the example cases.
Fixture: tests/fixtures/handbook_cpp/cpp/lru-cache (ours)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.cli.main import main as judge_main
from judge.grading.cpp import toolchain

from e2e.test_browser import _paste, serving
from e2e.waits import run_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not toolchain.find().pick("address,undefined"),
                                 reason="no C++ compiler with AddressSanitizer here")]

LRU = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_cpp" / "cpp" / "lru-cache"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    problems = tmp_path_factory.mktemp("problems")
    assert judge_main(["import", str(LRU), "--problems", str(problems), "--no-check"]) == 0
    with serving(tmp_path_factory.mktemp("web-data"), problems) as base:
        yield base


def test_a_cpp_problem_has_the_cpp_editor_and_runs_on_the_server(server, browser):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/problems/900?lang=en")
    page.wait_for_selector("#run:not([disabled])", timeout=60_000)
    assert page.get_attribute(".cm-content", "data-language") == "cpp"
    assert page.evaluate("!!document.querySelector('#py-sandbox')") is False
    assert page.inner_text("#py-status").startswith("C++: Run compiles your file")
    _paste(page, (LRU / "solution.cpp").read_text(encoding="utf-8"))
    run_and_wait(page, timeout=240_000)
    box = page.locator('.run-result[data-origin="server"][data-done="1"]')
    assert box.locator(".report-head .verdict").inner_text() == "AC"
    assert box.locator(".report-head .origin").inner_text() == \
        "practice run on the server (public tests, not stored)"
    assert box.locator("table.tests tbody tr").count() == 2  # example_basic, example_evict
    assert errors == []
    page.close()
