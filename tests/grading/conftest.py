"""The fixtures that files of grading/ share (the folder's other shared fixtures, `problem`
and `cache`, are tests/conftest.py's: judging/ and sandbox/ grade problem 001 too)."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from judge.grading import shards
from judge.sandbox.forkserver import warm_possible


@pytest.fixture
def scratch():
    """A scratch folder a run of the sandbox may write (test_warm_grader.py, test_warm_cuda.py)."""
    d = tempfile.mkdtemp(prefix="warm-test-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def two_cores(monkeypatch):
    """The hidden tests split into shards as on a 2-core host, warm (test_hidden_shards.py and
    test_shard_disagreement.py take it for every test: pytestmark)."""
    ok, why = warm_possible()
    assert ok, why  # root and bubblewrap: CI and the judge machines
    monkeypatch.setattr(shards, "cores", lambda: 2)  # the same split on any host
    monkeypatch.setattr(shards, "_slots", [1])
