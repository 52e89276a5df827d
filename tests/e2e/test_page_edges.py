"""Issue 12's rough edges 6-12 in Chromium, on one server (problem 143's page, graded by the
stand-in e2e.slow_grader so a grading can be caught half done), stopped and started again once.

6 completion: jedi's names alone, once each, dunders last; 7 a reload right after an edit keeps
it; 9 the server stopped mid-grading: a notice, Submit usable, the verdict once it is back;
10 the editor's accessible name, the statements' lang; 11 a past submission's code back in the
editor, the home page's best and latest; 12 the instructor's gradebook in Chinese and its CSV
(screenshots: artifacts/gradebook.png and connection-lost.png, or under $KVP_ARTIFACTS).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from judge.judging import python_ast
from web.app import front_end_build
from web.settings import REPO_ROOT

from e2e.test_browser import CHROMIUM, _free_port, _paste
from e2e.waits import submission_stamp, wait_for_new_submission

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PID = "143"
TOKEN = "page-edges-instructor-token"
HOSTILE_NAME = "=HYPERLINK(\"http://x\")"


class Server:
    """`python -m web.cli serve` in a child process that a test can kill and start again on the
    same port and data (short leases: a job of a killed server is graded again soon)."""

    def __init__(self, data: Path):
        self.data, self.port = data, _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def start(self) -> None:
        cmd = [sys.executable, "-m", "web.cli", "serve", "--host", "127.0.0.1",
               "--port", str(self.port), "--data", str(self.data), "--workers", "1",
               "--log-level", "warning", "--grader", "e2e.slow_grader:grade",
               "--lease-s", "3", "--heartbeat-s", "0.5", "--reaper-interval-s", "0.5"]
        env = dict(os.environ, PYTHONPATH=f"{REPO_ROOT}{os.pathsep}{REPO_ROOT / 'tests'}",
                   KVPRACTICE_INSTRUCTOR_TOKEN=TOKEN, KVP_SLOW_GRADE_S="8")
        log = open(self.data / "server.log", "a")
        self.proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
                                     env=env)
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(self.base + "/api/problems", timeout=2).read()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.proc.kill()
                    pytest.fail("the server did not start:\n" + (self.data / "server.log").read_text())
                time.sleep(0.2)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(15)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    if not (REPO_ROOT / "problems" / "143-tiered-kv-cache" / "problem.toml").is_file():
        pytest.skip("problem 143 is not installed")
    if not front_end_build()["ok"]:
        subprocess.run(["bash", str(REPO_ROOT / "scripts/build_frontend.sh")], check=True)
    srv = Server(tmp_path_factory.mktemp("page-edges"))
    srv.start()
    yield srv
    if srv.proc.poll() is None:
        srv.proc.terminate()
        srv.proc.wait(15)


@pytest.fixture(scope="module")
def artifacts():
    out = Path(os.environ.get("KVP_ARTIFACTS") or REPO_ROOT / "artifacts")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _completion_labels(page) -> list[str]:
    page.keyboard.press("Control+Space")
    page.wait_for_selector(".cm-tooltip-autocomplete li", timeout=20_000)
    labels = page.eval_on_selector_all(".cm-tooltip-autocomplete li .cm-completionLabel",
                                       "els => els.map(e => e.textContent)")
    page.keyboard.press("Escape")
    return labels


def test_editor_completion_draft_and_accessibility(server, browser):
    api = json.loads(urllib.request.urlopen(f"{server.base}/api/problems/{PID}").read())
    tree = python_ast.parse(api["handbook"]["prefix_cache"])
    top = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    ctx = browser.new_context(viewport={"width": 1366, "height": 900})
    page = ctx.new_page()
    page.goto(f"{server.base}/problems/{PID}?lang=en")

    # 10: the editor is a textbox with a name; each statement says its language.
    assert page.get_by_role("textbox", name="Code").count() == 1
    langs = page.eval_on_selector_all("article.statement:not(.explanation)",
                                      "els => els.map(e => [e.dataset.lang, e.lang])")
    assert ["zh", "zh"] in langs and ["en", "en"] in langs, langs

    # 6: `from prefix_cache import P`: the module's names only, each once.
    page.wait_for_function("() => window.kvpTimings && window.kvpTimings.pythonReadyMs",
                           timeout=180_000)
    page.click(".cm-content")
    page.wait_for_function("() => window.kvpPy.editorReady", timeout=180_000)
    _paste(page, "from prefix_cache import P")
    page.keyboard.press("Control+End")
    labels = _completion_labels(page)
    assert labels and len(labels) == len(set(labels)), labels
    assert not {"PermissionError", "print", "pass", "property"} & set(labels), labels
    wanted = {n for n in top if n.lower().startswith("p")}
    assert wanted and wanted <= set(labels), (wanted, labels)

    # 6: a class's attributes: public ones first, dunders last.
    _paste(page, "import prefix_cache\nprefix_cache.PrefixCachingBlockPool.")
    page.keyboard.press("Control+End")
    labels = _completion_labels(page)
    dunder = [i for i, name in enumerate(labels) if name.startswith("__")]
    public = [i for i, name in enumerate(labels) if not name.startswith("_")]
    assert dunder and public and max(public) < min(dunder), labels
    assert len(labels) == len(set(labels)), labels

    # 7: an edit, then a reload at once (before the 400 ms save): the edit is still there.
    _paste(page, "# a draft\n")
    page.keyboard.press("Control+End")
    page.keyboard.type("x = 42")
    page.reload()
    page.wait_for_selector(".cm-content")
    assert page.evaluate("window.kvpEditor.state.doc.toString()") == "# a draft\nx = 42"
    ctx.close()


def test_server_stopped_mid_grading_then_code_loaded_back(server, browser, artifacts):
    ctx = browser.new_context(viewport={"width": 1366, "height": 900})
    page = ctx.new_page()
    page.goto(f"{server.base}/problems/{PID}")
    page.wait_for_selector(".cm-content")
    code = "# SLOW: graded for a few seconds\nBUG = True\n"
    _paste(page, code)

    # 9: the server goes away while grading: a notice, Submit works again; back: the verdict.
    before = submission_stamp(page)
    page.click("#submit")
    page.wait_for_selector(".submit-panel table.tests.live tbody tr .v-running", timeout=60_000)
    server.kill()
    page.wait_for_selector(".submit-panel .connection-lost", timeout=30_000)
    assert "reconnecting" in page.inner_text(".submit-panel .connection-lost")
    assert page.is_enabled("#submit")
    page.screenshot(path=str(artifacts / "connection-lost.png"))
    server.start()
    wait_for_new_submission(page, before, timeout=120_000)
    assert page.inner_text(".submit-result .report-head .verdict") == "WA"
    assert page.locator(".connection-lost").count() == 0

    # 11: the submission's code back in the editor, over a different draft (after asking).
    _paste(page, "x = 1\n")
    page.click(".sub-link a")
    page.wait_for_selector("#load-code:enabled")  # enabled once the page's module has run
    asked = []
    page.on("dialog", lambda d: (asked.append(d.message), d.accept()))
    page.click("#load-code")
    page.wait_for_url(f"**/problems/{PID}")
    page.wait_for_selector(".cm-content")
    assert page.evaluate("window.kvpEditor.state.doc.toString()") == code
    assert asked, "replacing a different draft must ask first"
    ctx.close()


def _student(browser, base: str, name: str, codes: list[str]) -> object:
    """A browser of its own: a display name, then each code submitted and graded in turn."""
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{base}/submissions")
    page.fill("input[name=display_name]", name)
    with page.expect_navigation():
        page.click(".name-form button")
    for code in codes:
        page.evaluate("""async ([pid, code]) => {
          const r = await fetch('/api/submissions', {method: 'POST',
            headers: {'Content-Type': 'application/json'}, body: JSON.stringify({problem: pid, code})});
          const {id} = await r.json();
          for (;;) {
            const s = await (await fetch('/api/submissions/' + id)).json();
            if (s.status === 'done') return s.verdict;
            await new Promise(ok => setTimeout(ok, 100));
          }
        }""", [PID, code])
    return ctx, page


def test_home_statuses_and_the_instructors_gradebook(server, browser, artifacts):
    alice, alice_page = _student(browser, server.base, "Alice", ["ok = 1\n", "BUG = 1\n"])
    mallory, _ = _student(browser, server.base, HOSTILE_NAME, ["BUG = 1\n"])

    # 11: the home page: solved (the AC) and the later WA, both.
    alice_page.goto(server.base + "/")
    cell = alice_page.locator(f'td.progress[data-problem="{PID}"]')
    assert cell.locator(".best .v-AC").count() == 1
    assert cell.locator(".latest .v-WA").count() == 1

    # 12: the instructor's page in Chinese with the gradebook, and its CSV.
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = ctx.new_page()
    page.goto(f"{server.base}/instructor?lang=zh")
    page.fill("input[name=token]", TOKEN)
    with page.expect_navigation():
        page.click("form.name-form button")
    page.wait_for_selector("#gradebook")
    assert page.inner_text("#gradebook").startswith("成绩册")  # (练习): the practice one
    rows = {page.inner_text(f"{r} th[scope=row]"): r for r in
            [f'tr[data-student="{s}"]' for s in page.eval_on_selector_all(
                "table.gradebook tbody tr", "els => els.map(e => e.dataset.student)")]}
    assert {"Alice", HOSTILE_NAME} <= set(rows), rows
    alice_cell = page.locator(f'{rows["Alice"]} td[data-problem="{PID}"]')
    assert alice_cell.locator("a > .v-AC").count() == 1 and "最近" in alice_cell.inner_text()
    assert "提交次数: 2" in alice_cell.inner_text()
    assert "Workers" not in page.inner_text("main")
    # The screenshot in English: this machine's Chromium may have no CJK font.
    page.goto(f"{server.base}/instructor?lang=en")
    page.wait_for_selector("table.gradebook")
    table = page.locator("table.gradebook").bounding_box()
    head = page.locator("#gradebook").bounding_box()
    page.screenshot(path=str(artifacts / "gradebook.png"), full_page=True, clip={
        "x": 0, "y": head["y"] - 10, "width": 1280,
        "height": table["y"] + table["height"] - head["y"] + 20})
    with page.expect_download() as dl:
        page.click("#gradebook-csv")
    text = Path(dl.value.path()).read_text(encoding="utf-8")
    table_rows = list(csv.reader(io.StringIO(text)))
    names = [r[1] for r in table_rows[1:]]
    assert "Alice" in names and "'" + HOSTILE_NAME in names, names
    for ctx_ in (alice, mallory, ctx):
        ctx_.close()
