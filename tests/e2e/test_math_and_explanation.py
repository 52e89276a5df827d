"""Issue 30 item 14 in Chromium: a statement's `$...$` math is rendered (KaTeX, bundled: no
request leaves the server) where it showed as raw text, and an accepted Submit opens the worked
explanation on the page at once (it came only with a reload), its math rendered too."""

from __future__ import annotations

import os
import shutil

import pytest

from web.settings import REPO_ROOT

from e2e.fake_grader import PROBLEMS, REFERENCE
from e2e.test_browser import _paste, serving
from e2e.waits import submit_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CODE = (PROBLEMS / "901-toy-lru/submissions/accepted/lru_plain_dict.py").read_text()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    bank = tmp_path_factory.mktemp("math-bank")
    shutil.copytree(PROBLEMS / "901-toy-lru", bank / "problems" / "901-toy-lru")
    shutil.copytree(REFERENCE, bank / "reference")
    st = bank / "problems" / "901-toy-lru" / "statement.en.md"
    st.write_text(st.read_text() + "\nEach call costs $O(1)$; a full pass $$\\sum_{i=1}^{n} c_i$$.\n")
    (bank / "problems" / "901-toy-lru" / "explanation.en.md").write_text(
        "Keep a dict in insertion order: $O(1)$ per call.\n")
    with serving(tmp_path_factory.mktemp("math-data"), bank / "problems",
                 ["--grader", "e2e.fake_grader:quick"],
                 {"PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{REPO_ROOT / 'tests'}"}) as base:
        yield base


def test_math_is_rendered_and_the_explanation_opens_after_an_ac(server, browser):
    ctx = browser.new_context()
    page = ctx.new_page()
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(server)
            and not r.url.startswith(("data:", "blob:")) else None)
    page.goto(f"{server}/problems/901?lang=en")
    # Before: the paragraph read "$O(1)$" as it was typed.
    page.wait_for_selector("article.statement span.math[data-rendered] .katex")
    assert page.locator("article.statement span.math[data-display='1'] .katex-display").count() == 1
    assert "$O(1)$" not in page.inner_text("article.statement:not([hidden])")
    assert page.locator(".explanation-locked").count() == 1
    page.wait_for_selector(".cm-content")
    _paste(page, CODE)
    submit_and_wait(page, timeout=60_000)
    # Before: nothing until the page was loaded again.
    page.wait_for_selector("article.explanation span.math[data-rendered] .katex")
    assert page.locator(".explanation-locked").count() == 0
    assert "insertion order" in page.inner_text("article.explanation")
    assert outside == [], outside
    ctx.close()
