"""Issue 22 in Chromium, on problem 143, in English and Chinese, at 1440x1000, 1280x720 and
390x844: what a stuck student reads next.

1. a hint keyed to the first failure (143's unprotected_hits.py), one level at a time, linked to
   the statement's rule, counted in the browser;
2. the timeline's steps named with their arguments, the diverging step's difference in words;
3. an RE headline with its exception type, the student's line linked and marked in the editor,
   the test's line one click away; an empty file, an oversized one (Run as Submit);
4. the Chinese pages (problem page after a failing Run and Submit, submission page, home) hold
   no English word but code identifiers, test names, the English a label's translation keeps
   (a case name) and numbers;
5. the layouts: pane tabs and no sideways scrolling on a phone, editor and result in view
   together on a laptop;
6. first steps on the home page, a skip link, one short announcement per verdict, glyphs hidden
   from screen readers, the status line after Stop.
Screenshots go to artifacts/student-view/.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from pathlib import Path

import pytest

from judge.judging.labels import LabelTable
from judge.problem import load_problem
from web.settings import REPO_ROOT

from e2e.test_browser import _paste
from e2e.waits import run_and_wait, run_stamp, submit_and_wait, wait_for_new_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

P143 = REPO_ROOT / "problems" / "143-tiered-kv-cache"
WRONG = P143 / "submissions/wrong_answer/unprotected_hits.py"
REREADS = P143 / "submissions/wrong_answer/rereads_host_after_allocate.py"
# a folder of its own: test_browser.py empties artifacts/screenshots/ when it starts
SHOTS = Path(os.environ.get("KVP_ARTIFACTS") or REPO_ROOT / "artifacts") / "student-view"
VIEWPORTS = {"desktop": (1440, 1000), "laptop": (1280, 720), "phone": (390, 844)}
ENDLESS = "while True:\n    pass\n"


def _ready(page):
    page.wait_for_function("() => window.kvpPy && window.kvpPy.ready && !document.querySelector('#run').disabled",
                           timeout=180_000)


def _open(browser, server, lang, size, path="/problems/143"):
    w, h = VIEWPORTS[size]
    ctx = browser.new_context(viewport={"width": w, "height": h})
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    sep = "&" if "?" in path else "?"
    page.goto(f"{server}{path}{sep}lang={lang}")
    return ctx, page, errors


def _languages(page, server, **where):
    """English, then Chinese on the same page: yields each language once the page shows it."""
    yield "en"
    _in_language(page, server, "zh", **where)
    yield "zh"


def _in_language(page, server, lang, path="/problems/143"):
    """The same page in another language: a reload (the editor's draft is kept, in localStorage)."""
    page.goto(f"{server}{path}?lang={lang}")


def _shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def _no_sideways_scroll(page):
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def _in_view(page, selector):
    box = page.locator(selector).first.bounding_box()
    vh = page.viewport_size["height"]
    return box is not None and box["y"] >= 0 and box["y"] + min(box["height"], 40) <= vh


# ---- 1 and 2: the hint and the timeline --------------------------------------------------

def test_hint_and_timeline_for_unprotected_hits(server, browser):
    """In English, then in Chinese on the same page (the draft kept: no second paste)."""
    ctx, page, errors = _open(browser, server, "en", "desktop")
    for lang in _languages(page, server):
        _ready(page)
        page.evaluate("localStorage.removeItem('kvp:hints:143')")  # the count starts again
        if lang == "en":
            _paste(page, WRONG.read_text())
        else:
            assert page.evaluate("window.kvpEditor.state.doc.toString()") == WRONG.read_text()
        run_and_wait(page)
        _hint_and_timeline(page, lang)
    assert not errors, errors
    ctx.close()


def _hint_and_timeline(page, lang):
    assert page.inner_text(".run-result .report-head .verdict") == "WA"
    hints = load_problem("143").hints
    box = page.locator(".run-result .hints")
    shown_ids = box.get_attribute("data-hints").split()
    assert "free-gpu-hits-reused" in shown_ids
    hint = next(h for h in hints if h["id"] == shown_ids[0])
    levels = hint[lang]
    assert page.locator(".run-result .hint-levels li").count() == 0  # nothing until asked

    button = box.locator(".hint-next")
    first_label = button.inner_text()
    button.click()
    items = box.locator(".hint-levels li")
    assert items.count() == 1 and levels[0] in items.nth(0).inner_text()
    assert button.inner_text() != first_label  # now: a more specific one
    button.click()
    assert items.count() == 2 and levels[1] in items.nth(1).inner_text()
    count = box.locator(".hint-count").inner_text()
    assert re.search(r"\b2\b", count), count
    assert page.evaluate("JSON.parse(localStorage.getItem('kvp:hints:143')).length") == 2

    # the rule it is about: a heading of the statement the page shows, scrolled into view
    link = items.nth(0).locator("a.hint-rule")
    anchor = link.get_attribute("href").lstrip("#")
    assert anchor == hint["rule"][lang]
    link.click()
    heading = page.locator(f'.statement:not([hidden]) [id="{anchor}"]')
    assert heading.count() == 1 and heading.is_visible()
    top = heading.bounding_box()["y"]
    assert 0 <= top < page.viewport_size["height"]
    if lang == "en":
        box.scroll_into_view_if_needed()
        _shot(page, "hint-143-unprotected_hits")

    # 2. the timeline: chips with arguments, the diverging step's difference in words
    tl = page.locator(".run-result .timeline")
    chips = tl.locator(".tl-step").all_inner_texts()
    assert any(re.match(r"\d+\. (#\d+ )?lookup\([^)]+\)", c) for c in chips), chips
    lookup_args = [c for c in chips if "lookup(" in c]
    assert all("()" not in c for c in lookup_args), lookup_args
    banner = tl.locator(".tl-banner.diverges .tl-what")
    assert banner.count() == 1
    words = {"en": ["What differs:", "the free queue", "block", "host"],
             "zh": ["不同之处：", "空闲队列", "块", "主机内存"]}[lang]
    assert any(w in banner.inner_text() for w in words[1:]) and words[0] in banner.inner_text()


# ---- 3: errors point at the student's line ----------------------------------------------

def test_errors_point_at_the_students_line(server, browser):
    """In English, then in Chinese on the same page."""
    ctx, page, errors = _open(browser, server, "en", "laptop")
    for lang in _languages(page, server):
        _ready(page)
        _errors_point_at_the_students_line(page, server, lang)
    assert not errors, errors
    ctx.close()


def _errors_point_at_the_students_line(page, server, lang):
    source = REREADS.read_text()
    _paste(page, source)
    run_and_wait(page)
    assert page.inner_text(".run-result .report-head .verdict") == "RE"
    head = page.inner_text(".run-result .first-failure .ff-headline")
    assert head.startswith("KeyError: "), head
    mine = page.locator(".run-result .first-failure a.your-line")
    line = int(mine.get_attribute("data-line"))
    assert mine.inner_text() == {"en": f"tiered.py, line {line}", "zh": f"tiered.py 第 {line} 行"}[lang]
    assert "self.host[" in source.splitlines()[line - 1]  # the KeyError's own line
    # the editor marks that line
    page.wait_for_selector(".cm-lintRange-error", timeout=5000)
    marked = page.evaluate("""() => { const v = window.kvpEditor; const d = v.state.field ? null : null;
      const el = document.querySelector('.cm-lintRange-error'); const pos = v.posAtDOM(el);
      return v.state.doc.lineAt(pos).number; }""")
    assert marked == line
    mine.click()
    cursor = page.evaluate("window.kvpEditor.state.doc.lineAt(window.kvpEditor.state.selection.main.head).number")
    assert cursor == line
    # the test's line stays one click away
    assert page.locator(".run-result .first-failure .ff-test a.src-link").count() == 1
    # at 1280x720 the editor and the result are in view together, the statement on its own
    assert _in_view(page, ".editor") and _in_view(page, ".run-result .report-head")
    assert page.evaluate("(() => { const s = document.querySelector('.statement-pane'); "
                         "return s.scrollHeight > s.clientHeight; })()")
    _shot(page, f"laptop-1280x720-after-run-{lang}")
    # the editor wraps long lines; the Tests tab is single-spaced and does not clip long lines
    assert page.locator(".cm-content.cm-lineWrapping").count() == 1
    page.click("#tab-tests")
    lines = page.locator('#tests-pane .src-file[data-file="public/test_basic.py"] .src-line')
    texts = lines.all_inner_texts()
    i = next(i for i in range(len(texts) - 1) if 0 < len(texts[i]) < 40 and 0 < len(texts[i + 1]) < 40)
    y0, y1 = (lines.nth(k).bounding_box()["y"] for k in (i, i + 1))  # two short lines in a row
    height = page.evaluate("parseFloat(getComputedStyle(document.querySelector('pre.src .src-line')).lineHeight)")
    assert abs((y1 - y0) - height) < 2, (y0, y1, height)
    assert page.evaluate("[...document.querySelectorAll('#tests-pane pre.src')]"
                         ".every((p) => p.scrollWidth <= p.clientWidth + 1)")
    page.click("#tab-statement")

    # an empty file: one line naming the class
    _paste(page, "\n")
    run_and_wait(page)
    assert page.inner_text(".run-result .report-head .verdict") == "CE"
    assert page.inner_text(".run-result .ff-headline") == "ImportError: " + {
        "en": "the file does not define TieredPrefixCachingBlockPool",
        "zh": "文件中没有定义 TieredPrefixCachingBlockPool"}[lang]
    # a file over the size limit: Run refuses it as Submit does, with the same words
    limit = json.loads(urllib.request.urlopen(f"{server}/api/problems/143").read())["limits"]["max_code_bytes"]
    page.evaluate("(n) => window.kvpEditor.dispatch({changes: {from: 0, "
                  "to: window.kvpEditor.state.doc.length, insert: '#' + 'x'.repeat(n) + '\\n'}})", limit)
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#results .too-big")
    run_words = page.inner_text("#results .too-big")
    page.click("#submit")
    page.wait_for_selector("#submit-results .too-big")
    assert page.inner_text("#submit-results .too-big") == run_words
    assert re.search({"en": rf"the limit is {limit}\b", "zh": rf"上限是 {limit} 字节"}[lang], run_words), run_words


# ---- 4: no English word left on the Chinese pages --------------------------------------

# Words that read the same in both languages (names of things), and the judge's own words for
# the run's environment.
ALLOWED = {"python", "pytorch", "torch", "pyodide", "pytest", "cpu", "gpu", "kv", "utf", "json",
           "ctrl", "cmd", "enter", "ms", "lru", "pcie", "pinned"}  # the last two: terms the
#                                                      Chinese statement glosses in English


def _code_names() -> set[str]:
    """Names in the problem's code (starter, public tests, handbook modules; not their comments
    or strings), and their parts between underscores: the identifiers a page may show."""
    import io
    import tokenize
    p = load_problem("143")
    sources = [p.starter_source, *p.public_files().values(), *p.handbook_sources().values()]
    names = set()
    for src in sources:
        try:
            for tok in tokenize.generate_tokens(io.StringIO(src).readline):
                if tok.type == tokenize.NAME:
                    names |= {tok.string.lower(), *tok.string.lower().split("_")}
        except (tokenize.TokenError, SyntaxError):
            continue
    return names

_TEXT = """(skip) => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const p = n.parentElement;
    if (!p || p.closest(skip)) continue;
    const style = getComputedStyle(p);
    if (style.display === 'none' || style.visibility === 'hidden' || p.closest('[hidden]')) continue;
    out.push(n.textContent);
  }
  for (const a of document.querySelectorAll('[aria-label], [title]')) {
    if (a.closest(skip)) continue;
    out.push(a.getAttribute('aria-label') || '', a.getAttribute('title') || '');
  }
  return out.join('\\n');
}"""
# code, the editor, test names, the pool's picture (identifiers), verdict codes, the brand
SKIP = ("code, pre, kbd, script, style, noscript, .cm-editor, .tl-chips, .tl-cells, .tl-counters, "
        ".tl-steps, .tl-slider, .verdict, "
        ".brand, .lang-switch, .stmt-lang, .tag, select[name=tag], "
        "title, svg text")


def _english_words(page, labels) -> list[str]:
    text = page.evaluate(_TEXT, SKIP)
    for label in sorted(labels, key=len, reverse=True):  # a test's own words: its labels
        text = text.replace(label, " ")
    text = re.sub(r"\S+\.py\b", " ", text)  # file names
    text = re.sub(r"\b[0-9a-f]{8,}\b", " ", text)  # hex digests (the problem's version)
    text = re.sub(r"[\w.]*[_(\[.][\w.\[\]()']*", " ", text)  # identifiers: a_b, f(x), a.b, x[0]
    text = re.sub(r"\b[A-Z]{1,4}\b|\b[A-Z]\[\d+\]", " ", text)  # verdict codes, block names
    allowed = ALLOWED | _code_names()
    words = {w for w in re.findall(r"[A-Za-z]{2,}", text) if w.lower() not in allowed}
    if words and os.environ.get("KVP_SHOW_ENGLISH"):  # where each word sits, to fix it
        for w in sorted(words):
            m = re.search(rf".{{0,50}}\b{w}\b.{{0,50}}", text)
            print(f"{w!r}: {m.group(0) if m else ''!r}")
    return sorted(words)


def _labels(server, page, sid=None) -> set[str]:
    api = json.loads(urllib.request.urlopen(f"{server}/api/problems/143").read())
    labels = {o["label"] for e in (api["public_expectations"] or {}).values()
              for o in e.get("observations", [])}
    if sid is not None:  # asked as the page (a submission is its author's to read)
        sub = page.evaluate("(id) => fetch(`/api/submissions/${id}`).then((r) => r.json())", sid)
        for t in (sub.get("report") or {}).get("tests", []):
            if t.get("failure") and t["failure"].get("label"):
                labels.add(t["failure"]["label"])
    # 143's labels have their Chinese (labels.zh.json), so the page must show that: only a label
    # the table does not translate counts as the test's own text
    table = LabelTable(load_problem("143").labels("zh"))
    return {label for label in labels if label and table.lookup(label) is None}


def test_the_chinese_pages_hold_no_english(server, browser):
    ctx, page, errors = _open(browser, server, "zh", "desktop")
    _ready(page)
    _paste(page, WRONG.read_text())
    run_and_wait(page)
    page.locator(".run-result .hint-next").click()
    sid = submit_and_wait(page)
    labels = _labels(server, page, sid)
    left = _english_words(page, labels)
    assert left == [], left
    _shot(page, "zh-problem-after-run-and-submit")

    page.goto(f"{server}/submissions/{sid}?lang=zh")
    page.wait_for_selector("#report[data-done]", timeout=60_000)
    left = _english_words(page, labels)
    assert left == [], left
    # times in the reader's local time, not the raw ISO string
    shown = page.inner_text(".sub-head time")
    iso = page.get_attribute(".sub-head time", "datetime")
    assert shown != iso and not re.search(r"\d{4}-\d\d-\d\dT", shown), shown
    assert re.search(r"\d{2}:\d{2}", shown), shown

    page.goto(f"{server}/?lang=zh")
    left = _english_words(page, labels)
    assert left == [], left
    assert not errors, errors
    ctx.close()


# ---- 5 and 6: the layouts, first steps, accessibility -----------------------------------

def test_phone_layout(server, browser):
    """In English, then in Chinese on the same page (the draft kept: no second paste)."""
    ctx, page, errors = _open(browser, server, "en", "phone")
    for lang in _languages(page, server):
        _phone_layout(page, lang)
    assert not errors, errors
    ctx.close()


def _phone_layout(page, lang):
    _ready(page)
    assert page.is_visible(".pane-tabs")
    # the editor is on the first screen, not after the statement and the chart
    assert _in_view(page, ".editor")
    assert not page.is_visible(".statement-pane")
    if lang == "en":
        _paste(page, WRONG.read_text())
    else:
        assert page.evaluate("window.kvpEditor.state.doc.toString()") == WRONG.read_text()
    run_and_wait(page)
    # Run shows its result pane
    assert page.is_visible(".run-result .report-head") and not page.is_visible(".editor")
    assert _no_sideways_scroll(page)
    page.locator(".run-result .timeline").scroll_into_view_if_needed()
    assert _no_sideways_scroll(page)
    _shot(page, f"phone-390x844-result-{lang}")
    page.click('.pane-tabs [data-pane="statement"]')
    assert page.is_visible(".statement-pane") and not page.is_visible(".editor")
    assert _no_sideways_scroll(page)
    page.click('.pane-tabs [data-pane="code"]')
    assert page.is_visible(".editor")
    _shot(page, f"phone-390x844-code-{lang}")


def test_laptop_first_steps_and_accessibility(server, browser):
    """In English, then in Chinese in the same page."""
    ctx, page, errors = _open(browser, server, "en", "laptop", path="/")
    for lang in _languages(page, server, path="/"):
        _first_steps(page, server, lang)
        _accessibility_and_stop(page, lang)
    assert not errors, errors
    ctx.close()


def _first_steps(page, server, lang):
    start = page.locator(".first-steps a.start-here")
    assert start.get_attribute("href") == "/problems/141"
    steps = page.inner_text(".first-steps")
    assert {"en": "Run", "zh": "运行"}[lang] in steps and {"en": "Submit", "zh": "提交"}[lang] in steps

    page.goto(f"{server}/problems/143?lang={lang}")


def _accessibility_and_stop(page, lang):
    # the chapter is a link to the handbook
    assert "ai-infra-handbooks" in page.get_attribute(".chapter-link", "href")
    # the first Tab reaches the skip link, which goes to the editor's pane
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.classList.contains('skip-link')")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.closest('#editor-pane') !== null")
    # live regions: the status line (polite), one announcer; the panels themselves are not live
    assert page.get_attribute("#py-status", "aria-live") == "polite"
    assert page.locator("#results[aria-live], #submit-results[aria-live]").count() == 0
    # buttons named by their words, their glyphs hidden
    for sel in ("#run", "#submit", "#download", "#reset"):
        assert page.locator(f"{sel} [aria-hidden=true]").count() == 1
    _ready(page)
    ready_text = page.inner_text("#py-status")
    assert re.search({"en": r"Python ready", "zh": r"Python 已就绪|Python"}[lang], ready_text)

    _paste(page, WRONG.read_text())
    run_and_wait(page)
    page.wait_for_function("() => document.querySelector('#announce').textContent !== ''")
    said = page.inner_text("#announce")
    assert said and len(said) < 60 and "\n" not in said, said
    assert page.inner_text(".run-result .verdict-name") in said
    # Run's percentage is named for what it is
    assert {"en": "practice", "zh": "练习"}[lang] in page.inner_text(".run-result .score")
    _shot(page, f"laptop-1280x720-{lang}")

    # Stop: the status line says what happened now, not the page's age
    _paste(page, ENDLESS)
    before = run_stamp(page)
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#stop:not([hidden])", timeout=10_000)
    page.click("#stop")
    wait_for_new_run(page, before, timeout=10_000, inner=".run-stopped")
    _ready(page)
    status = page.inner_text("#py-status")
    assert "after the page opened" not in status and "页面打开" not in status, status
