"""The page's Python starts from a memory snapshot on a reload (issue 19), and Runs the same.

A first visit starts Pyodide cold, imports pytest and the page runner, and stores a snapshot of
that Python in the browser's Cache Storage; a reload restores it. This test loads a problem
page, Runs the starter, reloads, Runs again and compares; then spoils the stored snapshot and
checks that the page starts cold again and takes a fresh one.

The bound on the reload is relative (the cold start on the same machine, at the same moment)
plus an absolute one loose enough for a busy 2-core box: measured there (load average 2-10),
a cold start takes 3-6 s and a restore 0.5-0.9 s.
"""

from __future__ import annotations

import pytest

from e2e.test_browser import _target, browser, server  # noqa: F401 - shared fixtures
from e2e.waits import run_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CACHED_OVER_COLD = 0.6
CACHED_MAX_S = 5.0

_ROWS = """() => [...document.querySelectorAll('.run-result table.tests tbody tr')].map(
  (tr) => [...tr.querySelectorAll('td')].slice(0, 2).map((td) => td.innerText.trim()))"""


def _ready(page) -> dict:
    page.wait_for_function("() => window.kvpTimings && window.kvpTimings.pythonReadyMs"
                           " && !document.querySelector('#run').disabled", timeout=120_000)
    return page.evaluate("({ready: window.kvpTimings.pythonReadyMs, split: window.kvpTimings.pythonSplit,"
                         " line: document.querySelector('#py-status').innerText})")


def _snapshot_saved(page) -> None:
    page.wait_for_function("() => window.kvpTimings.snapshotBytes > 0", timeout=120_000)


def _run(page) -> dict:
    page.evaluate("document.querySelector('#results').replaceChildren()")
    run_and_wait(page)
    return {"verdict": page.inner_text(".run-result .report-head .verdict"), "rows": page.evaluate(_ROWS)}


def test_reload_restores_the_snapshot_and_runs_the_same(server, browser):
    _, pid, *_ = _target()
    ctx = browser.new_context(viewport={"width": 1366, "height": 900})
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{server}/problems/{pid}?lang=en")
    cold = _ready(page)
    assert cold["split"]["source"] == "cold", cold
    assert "pytest wheels" in cold["line"], cold["line"]
    _snapshot_saved(page)
    cold_run = _run(page)
    assert cold_run["rows"], cold_run

    page.reload()
    cached = _ready(page)
    assert cached["split"]["source"] == "snapshot", cached
    assert "restored from the saved snapshot" in cached["line"], cached["line"]
    print(f"\npython ready: cold {cold['ready'] / 1000:.2f} s, cached {cached['ready'] / 1000:.2f} s")
    assert cached["ready"] <= CACHED_OVER_COLD * cold["ready"], (cold, cached)
    assert cached["ready"] <= CACHED_MAX_S * 1000, cached
    # The restored Python runs the public tests exactly as the cold one did, twice (the first
    # Run leaves nothing behind that changes the second).
    assert _run(page) == cold_run
    assert _run(page) == cold_run

    # A stored snapshot that does not restore: the page starts cold, works, and stores a new one.
    page.evaluate("""async () => {
      const c = await caches.open('kvp-python-snapshot');
      for (const r of await c.keys()) if (r.url.endsWith('/memory')) await c.put(r, new Response('spoilt'));
    }""")
    page.reload()
    again = _ready(page)
    assert again["split"]["source"] == "cold", again
    _snapshot_saved(page)
    assert _run(page) == cold_run
    page.reload()
    assert _ready(page)["split"]["source"] == "snapshot"
    assert _run(page) == cold_run
    assert not errors, errors
    ctx.close()
