"""The fixtures the browser tests share: the platform serving (`server`), a headless Chromium
(`browser`), and the class flow's screenshot folder (`class_shots`). A file that needs its own
server (other problems, other settings) defines `server` itself.

The default `server` and `browser` are started once for all the files here that use them (each
costs seconds of CPU to start: a server imports the app, its zygote imports torch; a Chromium
starts its processes) and stopped when the run leaves tests/e2e/. The tests that share the server
do not depend on a fresh database: each is its own visitor (a new browser context) or signs up a
name of its own, and what it counts is its own (its submissions, its hints)."""

import contextlib
import os
import urllib.request
from pathlib import Path

import pytest

from web.settings import REPO_ROOT

from e2e.test_browser import CHROMIUM, FLAGS, _target, serving

HERE = Path(__file__).resolve().parent

# The fixture problem's own tests are run by the graders, never collected by the project's pytest.
collect_ignore_glob = ["fixtures/*"]

_lasting: dict[str, tuple[object, contextlib.ExitStack]] = {}  # name: (value, what closes it)


def _start(name: str, cm) -> object:
    stack = contextlib.ExitStack()
    value = stack.enter_context(cm)
    _lasting[name] = (value, stack)
    return value


def _close(name: str) -> None:
    if name in _lasting:
        _lasting.pop(name)[1].close()


def _close_lasting() -> None:
    for name in list(_lasting):
        _close(name)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # the test's own fixtures first (its contexts, a module's own server)
    if nextitem is None or Path(nextitem.path).resolve().parent != HERE:
        _close_lasting()  # the last test of tests/e2e/ in this run


def pytest_sessionfinish(session, exitstatus):
    _close_lasting()


def _answers(base: str) -> bool:
    try:
        urllib.request.urlopen(base + "/api/problems", timeout=10).read()
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The platform on _target()'s problems (the bank, real grading), one for every file here
    that does not define its own."""
    if "server" in _lasting and not _answers(_lasting["server"][0]):
        _close("server")  # an earlier file's, stopped since
    if "server" not in _lasting:
        _start("server", serving(tmp_path_factory.mktemp("web-data"), _target()[0]))
    return _lasting["server"][0]


@contextlib.contextmanager
def _chromium():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium, one for every file here; each test opens contexts of its own."""
    if "browser" in _lasting and not _lasting["browser"][0].is_connected():
        _close("browser")  # it crashed in an earlier file
    if "browser" not in _lasting:
        _start("browser", _chromium())
    return _lasting["browser"][0]


@pytest.fixture(scope="module")
def class_shots():
    """artifacts/class/ (or under $KVP_ARTIFACTS): test_class_flow.py's and test_oidc_browser.py's."""
    out = Path(os.environ.get("KVP_ARTIFACTS") or REPO_ROOT / "artifacts") / "class"
    out.mkdir(parents=True, exist_ok=True)
    return out
