"""Issue 30 item 11 in Chromium: axe-core (web/frontend's devDependency, injected into each page
with the page's CSP bypassed for the injection only) finds no critical or serious issue on the
home, problem (after a Run and a Submit), assignment (staff and student), course, gradebook and
submission pages, nor on 143's page showing a pool timeline; and after Run the keyboard's focus
is where it was, on Run (it fell to the page's body: 16 Tabs back)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from web.settings import REPO_ROOT

from e2e.test_browser import FIXTURE, _paste
from e2e.test_class_deadline import _account, _post, _utc
from e2e.waits import run_stamp, submit_and_wait, wait_for_new_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

AXE = REPO_ROOT / "web/frontend/node_modules/axe-core/axe.min.js"
TOKEN = "class-flow-instructor-token"
CODE = (FIXTURE / "901-toy-lru/submissions/accepted/lru_plain_dict.py").read_text()
P143 = REPO_ROOT / "problems" / "143-tiered-kv-cache"
BAD = ("critical", "serious")


def findings(page) -> list[dict]:
    """axe's critical and serious violations on the page as it stands."""
    if not AXE.is_file():
        pytest.skip("axe-core is not installed (scripts/build_frontend.sh runs npm ci)")
    page.add_script_tag(content=AXE.read_text())
    found = page.evaluate("""async () => (await axe.run(document, {resultTypes: ['violations']}))
        .violations.map(v => ({id: v.id, impact: v.impact,
                               where: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))""")
    return [f for f in found if f["impact"] in BAD]


def _run_by_keyboard(page) -> None:
    """Run as a keyboard user does: focus on Run, Enter; wait for that Run's own answer."""
    page.wait_for_selector("#run:not([disabled])", timeout=120_000)
    before = run_stamp(page)
    page.focus("#run")
    page.keyboard.press("Enter")
    wait_for_new_run(page, before)


def test_the_class_pages_have_no_serious_accessibility_issue(fake_server, browser):
    base = fake_server
    teacher = _account(browser, base, "a11y-prof", token=TOKEN, bypass_csp=True)
    cid = _post(teacher, base, "/courses", title="Lab").headers["location"].rsplit("/", 1)[1]
    code = teacher.request.get(f"{base}/courses/{cid}").text().split('id="join-code">')[1][:6]
    now = datetime.now(timezone.utc)
    assignment = _post(teacher, base, f"/courses/{cid}/assignments", title="HW", problems="901",
                       opens_at=_utc(now - timedelta(hours=1)), deadline=_utc(now + timedelta(hours=1)),
                       late_penalty="20", rule="best").headers["location"]
    student = _account(browser, base, "ann", viewport={"width": 390, "height": 844},
                       bypass_csp=True)
    student.set_default_timeout(60_000)
    _post(student, base, "/courses/join", code=code)
    page = student.new_page()
    page.goto(f"{base}/problems/901")
    page.wait_for_selector(".cm-content")
    _paste(page, CODE)
    _run_by_keyboard(page)
    # Before: focus fell to the page's body. Now it stays on Run.
    assert page.evaluate("document.activeElement && document.activeElement.id") == "run"
    sid = submit_and_wait(page, timeout=60_000)
    seen = {"problem": findings(page)}
    for name, url in (("home", "/"), ("assignment (student)", assignment),
                      ("submission", f"/submissions/{sid}")):
        page.goto(base + url)
        seen[name] = findings(page)
    staff = teacher.new_page()
    for name, url in (("course", f"/courses/{cid}"), ("assignment (staff)", assignment),
                      ("gradebook", "/instructor")):
        staff.goto(base + url)
        seen[name] = findings(staff)
    # Before (issue 30): select-name (members' role selects), link-in-text-block, color-contrast
    # of the code's names (pygments), among others.
    assert all(not f for f in seen.values()), json.dumps(seen, indent=1)


@pytest.mark.skipif(not (P143 / "problem.toml").is_file(), reason="the bank's problem 143")
def test_a_pool_timeline_has_no_serious_accessibility_issue(server, browser):
    ctx = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    page.goto(f"{server}/problems/143?lang=en")
    page.wait_for_selector(".cm-content")
    _paste(page, (P143 / "submissions/wrong_answer/unprotected_hits.py").read_text())
    _run_by_keyboard(page)
    page.wait_for_selector(".run-result .tl-row", timeout=60_000)
    assert page.evaluate("document.activeElement && document.activeElement.id") == "run"
    # Before: role=list without items in the timeline (critical), scrollable regions that the
    # keyboard cannot reach (serious).
    assert findings(page) == []
    ctx.close()
