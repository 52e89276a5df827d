"""The fixtures of the terminal's tests."""

from __future__ import annotations

import os

import pytest
from paths import REPO


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """The environment `judge` and practice/judge.py run in: the fixture problems, a cache and a
    workspace of the module's own, C.UTF-8 and no colour."""
    base = tmp_path_factory.mktemp("cli")
    e = dict(os.environ, KVPRACTICE_CACHE=str(base / "cache"),
             KVPRACTICE_PROBLEMS=str(REPO / "tests" / "fixtures" / "problems"),
             KVPRACTICE_WORKSPACE=str(base / "workspace"), LANG="C.UTF-8", NO_COLOR="1")
    e.pop("LC_ALL", None)
    return e
