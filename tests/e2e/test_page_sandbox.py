"""Issue 28 item 2, performed in Chromium: a student's code runs in a staff member's browser.

A student submits code whose module, on import, uses the viewer's authority: a synchronous
XMLHttpRequest that starts a regrade (POST /api/instructor/regrades), a `pyfetch` that renames the
viewer (PUT /api/me), the browser's own fetch (taken from the prototype, past anything that
replaced `fetch`) starting a regrade, `pyodide.http.open_url` reading the staff-only regrade list,
and a rewrite of the page's Python snapshot in Cache Storage. The staff member opens the submission,
presses "Load this code into the editor" and Run. Nothing may change: no regrade, the same name,
the same Cache Storage; and a snapshot in Cache Storage that is not the one the server publishes
is never restored (the page falls back on the server's).

The attack notes each outcome in the worker's globals and reports them from a later Run's import
(an exception the Run's report shows), so the test waits for the attack's own answer.
"""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from e2e.test_class_flow import TOKEN, _sign_up
from e2e.waits import run_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ATTACK = '''\
import asyncio
import json

import js
from pyodide.ffi import to_js
from pyodide.http import open_url, pyfetch

BASE = "{base}"
_g = js.globalThis


def _note(name, value):
    setattr(_g.kvpAttack, name, value)


def _regrade():
    try:
        x = js.XMLHttpRequest.new()
        x.open("POST", BASE + "/api/instructor/regrades", False)
        x.setRequestHeader("Content-Type", "application/json")
        x.send(json.dumps({{"problem": "901"}}))
        _note("regrade", x.status)
    except Exception as e:
        _note("regrade", "refused: " + type(e).__name__)
    try:
        _note("read", "read: " + open_url(BASE + "/api/instructor/regrades").read()[:80])
    except Exception as e:
        _note("read", "refused: " + type(e).__name__)


async def _later():
    try:
        r = await pyfetch(BASE + "/api/me", method="PUT", credentials="include",
                          headers={{"Content-Type": "application/json"}},
                          body=json.dumps({{"display_name": "pwned"}}))
        _note("rename", r.status)
    except Exception as e:
        _note("rename", "refused: " + type(e).__name__)
    try:  # the browser's own fetch, past whatever the page's Python put in its place
        own = js.Object.getPrototypeOf(js.self).constructor.prototype
        while not js.Object.prototype.hasOwnProperty.call(own, "fetch"):
            own = js.Object.getPrototypeOf(own)
        r = await own.fetch.call(js.self, BASE + "/api/instructor/regrades", to_js(
            {{"method": "POST", "credentials": "include", "body": json.dumps({{"problem": "901"}}),
             "headers": {{"Content-Type": "application/json"}}}}, dict_converter=js.Object.fromEntries))
        _note("own_fetch", r.status)
    except Exception as e:
        _note("own_fetch", "refused: " + type(e).__name__)
    try:
        cache = await js.caches.open("kvp-python-snapshot")
        for request in await cache.keys():
            await cache.put(request, js.Response.new("pwned"))
        await cache.put(BASE + "/kvp-python-snapshot/pwned/memory", js.Response.new("pwned"))
        _note("cache", "written")
    except Exception as e:
        _note("cache", "refused: " + type(e).__name__)


if not hasattr(_g, "kvpAttack"):
    _g.kvpAttack = js.Object.new()
    _regrade()
    asyncio.ensure_future(_later())
_seen = json.loads(js.JSON.stringify(_g.kvpAttack))
if len(_seen) < 5:
    raise RuntimeError("kvp-attack pending")
raise RuntimeError("kvp-attack " + json.dumps(_seen, sort_keys=True))
'''

# Every entry of the page's snapshot cache: its URL and a digest of its body.
CACHE_PRINT = """async () => {
  const c = await caches.open('kvp-python-snapshot');
  const out = [];
  for (const r of await c.keys()) {
    const body = await (await c.match(r)).arrayBuffer();
    const d = await crypto.subtle.digest('SHA-256', body);
    out.push([r.url, [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0')).join('')]);
  }
  return out.sort();
}"""

# A snapshot that still restores but is not the server's: one byte of its memory changed.
TAMPER = """async () => {
  const c = await caches.open('kvp-python-snapshot');
  let n = 0;
  for (const r of await c.keys()) {
    if (!r.url.endsWith('/memory')) continue;
    const bytes = new Uint8Array(await (await c.match(r)).arrayBuffer());
    bytes[bytes.length - 1] ^= 1;
    await c.put(r, new Response(bytes));
    n += 1;
  }
  return n;
}"""


@pytest.fixture(scope="module")
def server(fake_server):
    """conftest.py's fake_server: the fixture problems, the quick stand-in, the token."""
    return fake_server


def _regrades(base: str) -> list:
    req = urllib.request.Request(f"{base}/api/instructor/regrades",
                                 headers={"X-Instructor-Token": TOKEN})
    return json.loads(urllib.request.urlopen(req).read())["regrades"]


def _student_submits(browser, base: str) -> int:
    ctx = browser.new_context()
    page = ctx.new_page()
    _sign_up(page, base, "mallory", "Mallory")
    r = page.request.post(f"{base}/api/submissions", headers={"Origin": base},
                          data={"problem": "901", "code": ATTACK.format(base=base)})
    assert r.status == 202, r.text()
    sid = r.json()["id"]
    ctx.close()
    return sid


def _succeeded(outcome) -> bool:
    """An HTTP status under 400, a cache written, a body read: each the attack getting through."""
    if isinstance(outcome, int):
        return outcome < 400
    return outcome == "written" or outcome.startswith("read: ")


def _python_ready(page) -> dict:
    page.wait_for_function("() => window.kvpTimings && window.kvpTimings.pythonReadyMs"
                           " && !document.querySelector('#run').disabled", timeout=180_000)
    return page.evaluate("window.kvpTimings.pythonSplit")


def _attack_outcome(page) -> dict:
    """Runs until the attack reports every outcome (a Run's import raises it)."""
    for _ in range(10):
        run_and_wait(page, timeout=180_000)
        text = page.inner_text(".run-result")
        found = re.search(r"kvp-attack (\{.*?\})", text)
        if found:
            return json.loads(found.group(1))
        assert "kvp-attack pending" in text, text
    pytest.fail("the attack never reported its outcome")


def test_a_students_code_run_by_staff_changes_nothing(server, browser):
    sid = _student_submits(browser, server)
    ctx = browser.new_context()
    staff = ctx.new_page()
    errors: list[str] = []
    staff.on("pageerror", lambda e: errors.append(str(e)))
    staff.on("dialog", lambda d: d.accept())
    _sign_up(staff, server, "sandbox-prof", "Prof P", token=TOKEN)
    # The staff member's own Python first: its snapshot is kept in Cache Storage.
    staff.goto(f"{server}/problems/901?lang=en")
    _python_ready(staff)
    staff.wait_for_function("() => window.kvpTimings.snapshotBytes > 0", timeout=120_000)
    cache_before = staff.evaluate(CACHE_PRINT)
    assert cache_before, "the page kept no snapshot"
    name_before = staff.request.get(f"{server}/api/me").json()["display_name"]
    regrades_before = _regrades(server)  # the shared server's (none of the other files regrades)

    staff.goto(f"{server}/submissions/{sid}?lang=en")
    assert "Mallory" in staff.inner_text("#sub-student")
    with staff.expect_navigation():
        staff.click("#load-code")
    assert "kvp-attack" in staff.evaluate("window.kvpEditor.state.doc.toString()")
    _python_ready(staff)
    outcome = _attack_outcome(staff)
    print(f"\nthe attack's outcome in the staff member's page: {outcome}")

    assert _regrades(server) == regrades_before, "the student's code started a regrade"
    assert staff.request.get(f"{server}/api/me").json()["display_name"] == name_before
    assert staff.evaluate(CACHE_PRINT) == cache_before, "the student's code rewrote the cache"
    assert len(outcome) == 5 and not [k for k, v in outcome.items() if _succeeded(v)], outcome
    assert not errors, errors
    ctx.close()


def test_a_snapshot_the_server_does_not_publish_is_not_restored(server, browser):
    """What a write to Cache Storage would leave: a snapshot that restores, but not the
    server's. The page restores the server's instead, and keeps it again."""
    ctx = browser.new_context()
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/problems/901?lang=en")
    assert _python_ready(page)["source"] == "build"
    page.wait_for_function("() => window.kvpTimings.snapshotBytes > 0", timeout=120_000)
    page.reload()
    assert _python_ready(page)["source"] == "snapshot"  # the kept copy, as it was stored
    assert page.evaluate(TAMPER) >= 1
    page.reload()
    assert _python_ready(page)["source"] == "build", "a snapshot the server does not publish restored"
    page.wait_for_function("() => window.kvpTimings.snapshotBytes > 0", timeout=120_000)
    page.reload()
    assert _python_ready(page)["source"] == "snapshot"
    assert not errors, errors
    ctx.close()
