"""The fixtures the browser tests share: the platform serving (`server`), a headless Chromium
(`browser`), and the class flow's screenshot folder (`class_shots`). A file that needs its own
server (other problems, other settings) defines `server` itself; the files of the class pages
(the fixture problems, the quick stand-in grader, the instructor token) share `fake_server`.

The default `server` and `browser` are started once for all the files here that use them (each
costs seconds of CPU to start: a server imports the app, its zygote imports torch; a Chromium
starts its processes) and stopped after the last test of tests/e2e/ (pytest's package scope).
The tests that share a server do not depend on a fresh database: each is its own visitor (a
new browser context) or signs up a name of its own (on `fake_server`, a name no other file
uses), and what it counts is its own (its submissions, its hints, its course)."""

import os
from pathlib import Path

import pytest

from web.settings import REPO_ROOT

from e2e.test_browser import CHROMIUM, FLAGS, _target, serving

# The fixture problem's own tests are run by the graders, never collected by the project's pytest.
collect_ignore_glob = ["fixtures/*"]


@pytest.fixture(scope="package")
def server(tmp_path_factory):
    """The platform on _target()'s problems (the bank, real grading), one for every file here
    that does not define its own; stopped after the last test of tests/e2e/."""
    with serving(tmp_path_factory.mktemp("web-data"), _target()[0]) as base:
        yield base


@pytest.fixture(scope="package")
def fake_server(tmp_path_factory):
    """The platform on the fixture problems graded by e2e.fake_grader:quick, with the class
    files' instructor token (test_class_flow.serve): one for test_accessibility's class pages,
    test_class_deadline, test_class_flow, test_first_run, test_layout and test_page_sandbox."""
    from e2e.test_class_flow import serve
    yield from serve(tmp_path_factory.mktemp("fake-grader-data"))


@pytest.fixture(scope="package")
def browser():
    """A headless Chromium, one for every file here; each test opens contexts of its own."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def class_shots():
    """artifacts/class/ (or under $KVP_ARTIFACTS): test_class_flow.py's and test_oidc_browser.py's."""
    out = Path(os.environ.get("KVP_ARTIFACTS") or REPO_ROOT / "artifacts") / "class"
    out.mkdir(parents=True, exist_ok=True)
    return out
