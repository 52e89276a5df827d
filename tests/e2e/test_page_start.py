"""The page's Python starts from a memory snapshot (issue 19), and Runs the same as a cold one.

The build (scripts/build_frontend.sh) takes a snapshot of the page's Python under node once
pytest and the page runner are imported; the server publishes its digest, a first visit restores
it and keeps a copy in the browser's Cache Storage, which a reload restores while it is still the
published one. Where the build's snapshot is missing the page starts Pyodide cold and imports
pytest, every time: a snapshot the page took itself is not one the server publishes, so none is
kept (issue 28: the page's Python may run someone else's code). This test loads a problem page on
each path, Runs the starter on each and compares the results; it spoils the stored snapshot and
checks that the page falls back and stores a fresh one.

The bounds are relative (the cold start on the same machine, at the same moment) plus an absolute
one loose enough for a busy 2-core box: measured there (load average 2-10), a cold start takes
3-6 s, the build's snapshot 0.7-1.3 s and a reload 0.4-0.9 s inside the worker.
"""

from __future__ import annotations

import pytest

from e2e.test_browser import _target
from e2e.waits import run_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CACHED_OVER_COLD = 0.6
CACHED_MAX_S = 5.0

_ROWS = """() => [...document.querySelectorAll('.run-result table.tests tbody tr')].map(
  (tr) => [...tr.querySelectorAll('td')].slice(0, 2).map((td) => td.innerText.trim()))"""


def _ready(page) -> dict:
    page.wait_for_function("() => window.kvpTimings && window.kvpTimings.pythonReadyMs"
                           " && !document.querySelector('#run').disabled", timeout=120_000)
    return page.evaluate("({ready: window.kvpTimings.pythonReadyMs, worker: window.kvpTimings.workerInitMs,"
                         " split: window.kvpTimings.pythonSplit,"
                         " line: document.querySelector('#py-status').innerText})")


def _snapshot_saved(page) -> None:
    page.wait_for_function("() => window.kvpTimings.snapshotBytes > 0", timeout=120_000)


def _run(page) -> dict:
    page.evaluate("document.querySelector('#results').replaceChildren()")
    run_and_wait(page)
    return {"verdict": page.inner_text(".run-result .report-head .verdict"), "rows": page.evaluate(_ROWS)}


def _open(ctx, url, errors, no_build_snapshot=False):
    page = ctx.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    if no_build_snapshot:
        # A build that made no snapshot (or one the worker does not know by name).
        page.route("**/static/vendor/snapshot/**", lambda route: route.fulfill(status=404, body="no"))
    page.goto(url)
    return page


def test_first_visit_and_reload_restore_snapshots_and_run_the_same(server, browser):
    _, pid, *_ = _target()
    url = f"{server}/problems/{pid}?lang=en"
    errors = []

    # The reference: no build snapshot, so Pyodide starts cold and imports pytest itself.
    cold_ctx = browser.new_context(viewport={"width": 1366, "height": 900})
    page = _open(cold_ctx, url, errors, no_build_snapshot=True)
    cold = _ready(page)
    assert cold["split"]["source"] == "cold", cold
    assert "pytest wheels" in cold["line"], cold["line"]
    cold_run = _run(page)
    assert cold_run["rows"], cold_run
    page.reload()  # nothing was kept: cold again
    again = _ready(page)
    assert again["split"]["source"] == "cold", again
    assert page.evaluate("window.kvpTimings.snapshotBytes") is None
    assert _run(page) == cold_run
    cold_ctx.close()

    # A first visit with the build's snapshot (a fresh profile: nothing cached).
    ctx = browser.new_context(viewport={"width": 1366, "height": 900})
    page = _open(ctx, url, errors)
    first = _ready(page)
    assert first["split"]["source"] == "build", first
    assert "restored from the build's snapshot" in first["line"], first["line"]
    # The restored Python runs the public tests exactly as the cold one did, twice (the first
    # Run leaves nothing behind that changes the second).
    assert _run(page) == cold_run
    assert _run(page) == cold_run
    _snapshot_saved(page)

    page.reload()
    cached = _ready(page)
    assert cached["split"]["source"] == "snapshot", cached
    assert "restored from the saved snapshot" in cached["line"], cached["line"]
    print(f"\npython ready in the worker: cold {cold['worker'] / 1000:.2f} s, first visit (build's"
          f" snapshot) {first['worker'] / 1000:.2f} s, reload {cached['worker'] / 1000:.2f} s")
    assert first["worker"] <= CACHED_OVER_COLD * cold["worker"], (cold, first)
    assert cached["worker"] <= CACHED_OVER_COLD * cold["worker"], (cold, cached)
    assert cached["ready"] <= CACHED_MAX_S * 1000, cached
    assert _run(page) == cold_run

    # A stored snapshot that does not restore: the page falls back on the build's, works, and
    # stores it again.
    page.evaluate("""async () => {
      const c = await caches.open('kvp-python-snapshot');
      for (const r of await c.keys()) if (r.url.endsWith('/memory')) await c.put(r, new Response('spoilt'));
    }""")
    page.reload()
    again = _ready(page)
    assert again["split"]["source"] == "build", again
    _snapshot_saved(page)
    assert _run(page) == cold_run
    page.reload()
    assert _ready(page)["split"]["source"] == "snapshot"
    assert _run(page) == cold_run
    assert not errors, errors
    ctx.close()
