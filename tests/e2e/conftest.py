"""The fixtures the browser tests share: the platform serving (`server`), a headless Chromium
(`browser`), and the class flow's screenshot folder (`class_shots`). A file that needs its own
server (other problems, other settings) defines `server` itself."""

import os
from pathlib import Path

import pytest

from web.settings import REPO_ROOT

from e2e.test_browser import CHROMIUM, FLAGS, _target, serving

# The fixture problem's own tests are run by the graders, never collected by the project's pytest.
collect_ignore_glob = ["fixtures/*"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("web-data"), _target()[0]) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
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
