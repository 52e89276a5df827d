"""A new student with the package only (issue 29), in Chromium and on a terminal, graded by the
real core: sign up, download 143's package from the problem page, make a personal token on the
account page, `judge.py login`, solve 143 locally (`judge.py test`: AC on the public tests),
`judge.py submit` it and watch the verdict arrive test by test, then find that submission with
its verdict in the page's list of submissions. The same file is then submitted from the page,
and the two times (submit to verdict) are written to artifacts/student-package/timings.json (or
$KVP_ARTIFACTS/student-package)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from package_support import pytest_only_site, student_env, unpack

from web.settings import REPO_ROOT

from e2e.test_browser import _paste
from e2e.waits import submit_and_wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

P143 = REPO_ROOT / "problems" / "143-tiered-kv-cache"
ACCEPTED = (P143 / "submissions/accepted/host_store.py").read_text()
PASSWORD = "correct horse battery"


@pytest.fixture(scope="module")
def out():
    folder = Path(os.environ.get("KVP_ARTIFACTS") or REPO_ROOT / "artifacts") / "student-package"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# `server`: tests/e2e/conftest.py's, the bank graded by the real core (the files here share it)


def _sign_up(page, base: str, username: str) -> None:
    page.goto(f"{base}/signup?lang=en")
    page.fill("#signup-form input[name=username]", username)
    page.fill("#signup-form input[name=display_name]", username)
    page.fill("#signup-form input[name=password]", PASSWORD)
    with page.expect_navigation():
        page.click("#signup-form button[type=submit]")


def _submit_from_terminal(root: Path, env: dict, mine: Path) -> tuple[int, float, list[str]]:
    """`judge.py submit 143 FILE`: the submission's id, seconds from the command's start to
    its verdict line, and what it printed."""
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-S", "judge.py", "submit", "143", str(mine)],
                            cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    lines, took = [], None
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("Verdict:") and took is None:
            took = time.monotonic() - t0
    assert proc.wait(600) == 0, "\n".join(lines)
    sid = int(re.search(r"as #(\d+)", "\n".join(lines)).group(1))
    return sid, took, lines


def test_a_student_with_the_package_solves_and_submits_143(server, browser, out, tmp_path):
    ctx = browser.new_context(viewport={"width": 1366, "height": 900}, accept_downloads=True)
    page = ctx.new_page()
    _sign_up(page, server, "erin")
    page.goto(f"{server}/problems/143?lang=en")
    with page.expect_download(timeout=120_000) as dl:
        page.click("#package-link")
    zipped = tmp_path / dl.value.suggested_filename
    dl.value.save_as(zipped)
    assert zipped.name == "kvpractice-143-tiered-kv-cache.zip"
    root = unpack(zipped.read_bytes(), tmp_path / "student")

    page.goto(f"{server}/account?lang=en")
    page.fill("#token-form input[name=name]", "laptop")
    with page.expect_navigation():
        page.click("#token-form button[type=submit]")
    token = page.inner_text("#new-token").strip()
    page.screenshot(path=str(out / "account-token.png"), full_page=True)

    env = student_env(pytest_only_site(tmp_path / "site"), tmp_path)
    run = lambda *a, **kw: subprocess.run([sys.executable, "-S", "judge.py", *a], cwd=root,  # noqa: E731
                                          env=env, capture_output=True, text=True, timeout=300,
                                          **kw)
    assert run("login", input=token).returncode == 0
    assert run("start", "143").returncode == 0
    mine = root / "workspace" / "143-tiered-kv-cache.py"
    mine.write_text(ACCEPTED)
    local = run("test", "143")
    assert local.returncode == 0 and "Verdict: AC" in local.stdout, local.stdout + local.stderr

    sid, cli_s, lines = _submit_from_terminal(root, env, mine)
    (out / "judge-submit.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    hidden = [i for i, line in enumerate(lines) if re.match(r"  AC\s+(\S+s)?\s+hidden/", line)]
    verdict = next(i for i, line in enumerate(lines) if line.startswith("Verdict: AC"))
    assert len(hidden) > 5 and hidden[-1] < verdict, "\n".join(lines)

    page.goto(f"{server}/submissions?lang=en")
    row = page.locator(f"tr:has(a[href='/submissions/{sid}'])")
    row.locator(".verdict.v-AC").wait_for(timeout=30_000)
    page.screenshot(path=str(out / "submission-list.png"), full_page=True)

    page.goto(f"{server}/problems/143?lang=en")
    page.wait_for_selector(".cm-content")
    _paste(page, ACCEPTED)
    t0 = time.monotonic()
    page_sid = submit_and_wait(page)
    page_s = time.monotonic() - t0
    assert page.inner_text(".submit-result .report-head .verdict").strip().startswith("AC")
    timings = {"judge_py_submit_to_verdict_s": round(cli_s, 2),
               "page_submit_to_verdict_s": round(page_s, 2),
               "order": ["judge.py submit", "page Submit"], "submissions": [sid, int(page_sid)],
               "problem": "143", "file": "submissions/accepted/host_store.py"}
    (out / "timings.json").write_text(json.dumps(timings, indent=1) + "\n")
    print("\n" + json.dumps(timings))
    ctx.close()
