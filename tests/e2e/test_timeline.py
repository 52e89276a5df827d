"""Issue 12's acceptance test in Chromium: submit 143's unprotected_hits.py and find both pool
timelines (the reference's and the submission's) with the first differing step highlighted, on
the problem page and on the submission page; Run it in the page and find the same picture. Also
the experiment chart. Screenshots go to artifacts/ (or $KVP_ARTIFACTS): timeline-submit.png,
timeline-run.png, timeline-submission-page.png; the page's times to artifacts/timings-timeline.json.

unprotected_hits fails a public test (its first public failure is the pool divergence the issue
describes: a lookup returns a block that allocate has just reused), so a trace is in the report.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path

import pytest

from web.settings import REPO_ROOT

from e2e.test_browser import _paste
from e2e.waits import run_and_wait, submit_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

P143 = REPO_ROOT / "problems" / "143-tiered-kv-cache"
WRONG = P143 / "submissions/wrong_answer/unprotected_hits.py"
ACCEPTED = P143 / "submissions/accepted/host_store.py"


@pytest.fixture(scope="module")
def artifacts():
    out = Path(os.environ.get("KVP_ARTIFACTS") or REPO_ROOT / "artifacts")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _picture(page, scope: str) -> dict:
    """What a timeline shows at its current step: the step, whether it is the marked one, and
    each side's call, cells (block, state, label) and marked differences."""
    return page.evaluate("""(scope) => {
      const t = document.querySelector(scope + ' .timeline');
      if (!t) return null;
      const side = (name) => {
        const s = t.querySelector(`.tl-side[data-side=${name}]`);
        return {call: s.querySelector('.tl-call').innerText,
                cells: [...s.querySelectorAll('.tl-cell')].map(c => [c.dataset.block, c.dataset.state,
                                                                     c.querySelector('.tl-label').innerText]),
                diffs: s.querySelectorAll('.tl-diff').length};
      };
      return {step: t.dataset.step, divergesAt: t.dataset.divergesAt,
              marked: [...t.querySelectorAll('.tl-step.diverges')].map(b => b.dataset.step),
              diverging: t.querySelector('.tl-sides').classList.contains('tl-diverging'),
              expected: side('expected'), got: side('got')};
    }""", scope)


def test_timelines_for_submit_run_and_the_submission_page(server, browser, artifacts):
    api = json.loads(urllib.request.urlopen(f"{server}/api/problems/143").read())
    ctx = browser.new_context(viewport={"width": 1440, "height": 1000})
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    timings = {}
    page.goto(f"{server}/problems/143?lang=en")
    page.wait_for_function("() => window.kvpTimings && window.kvpTimings.pythonReadyMs", timeout=120_000)
    timings["python_ready_s"] = round(page.evaluate("window.kvpTimings.pythonReadyMs") / 1000, 2)

    # The experiment chart: one line per reference run, its numbers in the table beside it.
    page.wait_for_selector("#experiment svg polyline")
    ref = api["experiment"]["reference"]
    assert page.locator("#experiment svg polyline").count() == len(ref) == 3
    for run in ref:
        row = page.locator(f'#experiment tr[data-series^="{run["run"]} ("]')
        assert row.locator("td").all_text_contents() == [str(v) for v in run["per_turn"]]
    page.locator("#experiment").screenshot(path=str(artifacts / "experiment-chart.png"))

    # Submit: the report's trace drawn as two timelines, opened on the first differing step.
    _paste(page, WRONG.read_text())
    t0 = time.monotonic()
    submit_and_wait(page)
    timings["submit_to_verdict_s"] = round(time.monotonic() - t0, 2)
    assert page.inner_text(".submit-result .report-head .verdict") == "WA"
    sub_href = page.get_attribute(".sub-link a", "href")
    sub_id = sub_href.rsplit("/", 1)[-1]
    # the page's own fetch: the submission is the visitor's (their cookie)
    report = page.evaluate("(id) => fetch(`/api/submissions/${id}`).then(r => r.json())", sub_id)["report"]
    trace = report["first_failure"]["trace"]
    assert trace and trace["diverges_at"] is not None, report["first_failure"]
    at = str(trace["diverges_at"])
    # the student's own runs join the chart when the hidden experiment test passed
    yours = (report.get("experiment") or {}).get("yours")
    assert page.locator("#experiment svg polyline").count() == 3 + len(yours or [])
    timings["report_has_your_experiment"] = bool(yours)
    sub = _picture(page, ".submit-result")
    assert sub["marked"] == [at] and sub["step"] == at and sub["divergesAt"] == at
    assert sub["diverging"] and sub["got"]["diffs"] > 0
    exp_step, got_step = trace["expected"][-1], trace["got"][-1]
    assert json.dumps(exp_step["result"], separators=(",", ":")) in sub["expected"]["call"].replace(" ", "")
    assert json.dumps(got_step["result"], separators=(",", ":")) in sub["got"]["call"].replace(" ", "")
    # each block's colour follows ref_cnt and the prefix it holds
    for (bid, state, label), rc, held in zip(sub["got"]["cells"], got_step["state"]["ref_cnt"],
                                              got_step["state"]["blocks"]):
        assert state == ("in-use" if rc > 0 else "free-cached" if held else "free-empty"), bid
        assert label == (held or "·")
    page.locator(".submit-result .timeline").screenshot(path=str(artifacts / "timeline-submit.png"))

    # The step slider from the keyboard: one step back leaves the marked step; the button returns.
    slider = page.locator(".submit-result .tl-slider")
    assert "first difference" in slider.get_attribute("aria-valuetext")
    slider.focus()
    page.keyboard.press("ArrowLeft")
    back = _picture(page, ".submit-result")
    assert int(back["step"]) == int(at) - 1 and not back["diverging"]
    page.click(".submit-result .tl-jump")
    assert _picture(page, ".submit-result")["step"] == at

    # Run in the page: the same picture from the page's own runner, beside the Submit panel.
    run_and_wait(page)
    timings["run_s"] = round(page.evaluate("window.kvpTimings.lastRunMs") / 1000, 2)
    assert page.inner_text(".run-result .report-head .verdict") == "WA"
    run = _picture(page, ".run-result")
    assert run is not None, page.inner_text("#results")
    assert run["marked"] == [at] and run["diverging"]
    assert (run["expected"], run["got"]) == (sub["expected"], sub["got"])
    assert page.inner_text(".submit-result .report-head .verdict") == "WA", "Run hid Submit"
    page.locator(".run-result .timeline").screenshot(path=str(artifacts / "timeline-run.png"))

    # An accepted Submit passes the hidden experiment test: its runs join the chart, dashed.
    _paste(page, ACCEPTED.read_text())
    submit_and_wait(page)
    assert page.inner_text(".submit-result .report-head .verdict") == "AC"
    page.wait_for_function("() => document.querySelectorAll('#experiment svg polyline').length === 6")
    dashed = page.locator("#experiment svg polyline[stroke-dasharray]")
    assert dashed.count() == 3
    assert all(n.endswith("(your pool)") for n in
               [dashed.nth(k).get_attribute("data-series") for k in range(3)])
    page.locator("#experiment").screenshot(path=str(artifacts / "experiment-chart-yours.png"))

    # The submission page draws the timeline from the stored report.
    page.goto(server + sub_href)
    page.wait_for_selector("#report[data-done] .timeline", timeout=30_000)
    assert _picture(page, "#report") == sub
    page.locator("#report .timeline").screenshot(path=str(artifacts / "timeline-submission-page.png"))

    assert not errors, errors
    (artifacts / "timings-timeline.json").write_text(json.dumps(timings, indent=1))
    print("\n" + json.dumps(timings, indent=1))
    ctx.close()
