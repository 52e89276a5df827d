"""Issue 30 in Chromium: students meet an assignment's deadline on the problem page itself. An
instructor in Shanghai sets a deadline a few seconds ahead with a late window at 20 % penalty;
a student on a phone in Chinese and one on a laptop in English (an en-US browser in New York)
open the problem: its due time stands beside Submit and counts down, at the deadline the page
turns to "late: counts 80 %" with no reload, and a submission's verdict says the same. Screenshots
(phone, laptop, Chinese) of the problem and assignment pages before and after the deadline:
artifacts/class-deadline/ (or $KVP_ARTIFACTS/class-deadline)."""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from web.settings import REPO_ROOT

from e2e.test_browser import FIXTURE, _paste
from e2e.waits import submit_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TOKEN = "class-flow-instructor-token"
PASSWORD = "correct horse battery"
CODE = (FIXTURE / "901-toy-lru/submissions/accepted/lru_plain_dict.py").read_text()
# Long enough for two students' problem pages to load before it on a busy 2-core machine.
LEAD = timedelta(seconds=20)
STUDENTS = {  # username: (locale, zone, viewport, page language)
    "phone": ("zh-CN", "Asia/Shanghai", {"width": 390, "height": 844}, "zh"),
    "laptop": ("en-US", "America/New_York", {"width": 1440, "height": 900}, "en"),
}
LATE_NOTE = {"zh": "迟交：按 80 % 计分", "en": "late: counts 80 %"}


@pytest.fixture(scope="module")
def server(fake_server):
    """conftest.py's fake_server: the fixture problems, the quick stand-in, the token."""
    return fake_server


@pytest.fixture(scope="module")
def shots():
    out = Path(os.environ.get("KVP_ARTIFACTS") or REPO_ROOT / "artifacts") / "class-deadline"
    out.mkdir(parents=True, exist_ok=True)
    return out


def _post(ctx, base: str, path: str, **form):
    """A form as the page posts it (same origin), through the context's own cookies."""
    r = ctx.request.post(base + path, form=form, headers={"Origin": base}, max_redirects=0)
    assert r.status in (200, 303), (path, r.status, r.text()[:300])
    return r


def _account(browser, base: str, username: str, locale="en-US", zone="UTC",
             viewport=None, token: str = "", **context):
    ctx = browser.new_context(locale=locale, timezone_id=zone,
                              viewport=viewport or {"width": 1280, "height": 720}, **context)
    _post(ctx, base, "/signup", username=username, password=PASSWORD, display_name=username,
          instructor_token=token)
    return ctx


def _utc(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _course_with_students(browser, base: str):
    teacher = _account(browser, base, "deadline-prof", zone="Asia/Shanghai", token=TOKEN)
    r = _post(teacher, base, "/courses", title="KV lab")
    cid = r.headers["location"].rsplit("/", 1)[1]
    code = re.search(r'id="join-code">([^<]+)<', teacher.request.get(
        f"{base}/courses/{cid}").text()).group(1)
    students = {}
    for name, (locale, zone, viewport, _) in STUDENTS.items():
        students[name] = _account(browser, base, name, locale, zone, viewport)
        _post(students[name], base, "/courses/join", code=code)
    return teacher, cid, students


def test_the_problem_page_counts_down_and_turns_late_at_the_deadline(server, browser, shots):
    teacher, cid, students = _course_with_students(browser, server)
    now = datetime.now(timezone.utc).replace(microsecond=0)
    r = _post(teacher, server, f"/courses/{cid}/assignments", title="Homework 1", problems="901",
              opens_at=_utc(now - timedelta(minutes=5)), deadline=_utc(now + LEAD),
              late_until=_utc(now + timedelta(hours=1)), late_penalty="20", rule="best")
    assignment = server + r.headers["location"]
    pages = {}
    for name, ctx in students.items():
        lang = STUDENTS[name][3]
        page = pages[name] = ctx.new_page()
        page.goto(f"{server}/problems/901?lang={lang}")
        page.wait_for_selector(".cm-content")
        # Before: no line beside Submit at all. Now: the due time, counting down.
        item = page.locator('#due .due[data-phase="open"]')
        assert item.count() == 1, page.inner_html("#due") if page.query_selector("#due") else "no #due"
        page.wait_for_function("() => /\\d/.test(document.querySelector('#due [data-countdown]').textContent)")
        assert page.locator("#due .late-note").is_hidden()
        page.screenshot(path=str(shots / f"{name}-problem-before.png"))
    for name, page in pages.items():
        lang = STUDENTS[name][3]
        # the deadline passes while the page is open: it turns late by itself
        page.wait_for_selector('#due .due[data-phase="late window"] .late-note:not([hidden])',
                               timeout=int(LEAD.total_seconds() * 1000) + 30_000)
        assert page.inner_text("#due .late-note").startswith(LATE_NOTE[lang])
        _paste(page, CODE)
        submit_and_wait(page, timeout=60_000)
        # Before: "Accepted · score 100%" and nothing more. Now the verdict says what it counts.
        note = page.inner_text('.submit-result .standing-note [data-phase="late window"]')
        assert LATE_NOTE[lang] in note, note
        page.screenshot(path=str(shots / f"{name}-problem-after.png"))
        page.goto(assignment + f"?lang={lang}")
        assert page.get_attribute("#my-state", "data-state") == "late"
        page.screenshot(path=str(shots / f"{name}-assignment-after.png"), full_page=True)
    for ctx in (teacher, *students.values()):
        ctx.close()


# "2 Dec 2026 03:36 (GMT+8)", seconds when not 0; Chinese: year, month, day.
ONE_FORM = {"en": re.compile(r"\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}(:\d{2})? \(GMT\+8\)"),
            "zh": re.compile(r"\d{4}年\d{1,2}月\d{1,2}日 \d{2}:\d{2}(:\d{2})? \(GMT\+8\)")}


def test_one_deadline_is_written_one_way_on_the_page_and_in_its_form(server, browser, shots):
    """An en-US browser in Shanghai: the heading and the form below it wrote one deadline as
    "02/12/2026" and "12/02/2026". Now both are "2 Dec 2026 03:36 (GMT+8)" (the form's field
    without the zone, which its label names), and saving the form keeps the deadline."""
    teacher = _account(browser, server, "deadline-prof2", zone="Asia/Shanghai", token=TOKEN)
    cid = _post(teacher, server, "/courses", title="KV lab 2").headers["location"].rsplit("/", 1)[1]
    deadline = datetime(2026, 12, 1, 19, 36, tzinfo=timezone.utc)  # 03:36 on 2 Dec in Shanghai
    r = _post(teacher, server, f"/courses/{cid}/assignments", title="Homework 2", problems="901",
              opens_at="2026-11-01T00:00:00Z", deadline=_utc(deadline), late_until="",
              late_penalty="0", rule="best")
    url = server + r.headers["location"]
    page = teacher.new_page()
    for lang, heading in (("en", "2 Dec 2026 03:36 (GMT+8)"), ("zh", "2026年12月2日 03:36 (GMT+8)")):
        page.goto(f"{url}?lang={lang}")
        assert page.inner_text("main p time") == heading
        field = page.input_value("#times-form input[name=deadline]")
        assert field == heading.rsplit(" (", 1)[0], field
        assert page.inner_text("#times-form [data-tz-name] >> nth=1") == "Asia/Shanghai, GMT+8"
        for text in page.locator("main time").all_inner_texts():
            assert ONE_FORM[lang].fullmatch(text), text
        page.screenshot(path=str(shots / f"instructor-times-{lang}.png"), full_page=True)
    with page.expect_navigation():
        page.click("#times-form button[type=submit]")
    assert page.get_attribute("main p time", "datetime") == "2026-12-01T19:36:00Z"
    teacher.close()
