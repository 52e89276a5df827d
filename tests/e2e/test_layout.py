"""Issue 30 item 13 in Chromium: the header on a phone (390x844, Chinese, an instructor's
session, so every link) took 220 px of 844 on every page (114 here with fewer links); after a
Run on a laptop (1280x720) the result was a 200 px strip under the editor; a verdict chip
(SKIP) wrapped in its cell. Now: the header at most 80 px on the phone and 60 px on the laptop,
the result pane at least 45 % of the laptop's height, chips on one line."""

from __future__ import annotations

import pytest

from e2e.test_browser import FIXTURE, _paste
from e2e.test_class_deadline import TOKEN, _account
from e2e.waits import run_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CODE = (FIXTURE / "901-toy-lru/submissions/accepted/lru_plain_dict.py").read_text()
HEADER = "document.querySelector('header.topbar').getBoundingClientRect().height"


@pytest.fixture(scope="module")
def server(fake_server):
    """conftest.py's fake_server: the fixture problems, the quick stand-in, the token."""
    return fake_server


def test_the_header_is_short_on_a_phone_and_the_result_has_room_on_a_laptop(server, browser):
    phone = _account(browser, server, "layout-prof", locale="zh-CN", token=TOKEN,
                     viewport={"width": 390, "height": 844})
    page = phone.new_page()
    for url in ("/", "/problems/901", "/courses", "/instructor", "/account"):
        page.goto(f"{server}{url}?lang=zh")
        assert page.evaluate(HEADER) <= 80, (url, page.evaluate(HEADER))
    laptop = _account(browser, server, "layout-prof2", token=TOKEN)
    page = laptop.new_page()
    page.goto(f"{server}/problems/901?lang=en")
    assert page.evaluate(HEADER) <= 60
    page.wait_for_selector("#run:not([disabled])", timeout=120_000)
    _paste(page, CODE + "\nraise RuntimeError('a failing import')\n")
    run_and_wait(page)
    pane = page.evaluate("document.querySelector('.result-pane').getBoundingClientRect().height")
    assert pane >= 0.45 * 720, pane
    chip = page.locator(".run-result .verdict").first
    assert chip.evaluate("e => getComputedStyle(e).whiteSpace") == "nowrap"
    phone.close()
    laptop.close()
