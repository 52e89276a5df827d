"""The fixtures of the runner's tests: the submission's side of the call proxy in a plain
subprocess (tests/served_submission.py), joined to a guarded endpoint in the test's process."""

from __future__ import annotations

import pytest
from served_submission import start_served


@pytest.fixture
def served_endpoint(tmp_path):
    """start(module_source) -> the endpoint; every serving process is killed afterwards."""
    procs: list = []
    yield lambda module_source: start_served(tmp_path, module_source, procs)
    for p in procs:
        p.kill()
        p.wait()


@pytest.fixture
def served(served_endpoint):
    """start(module_source) -> a function importing a name from the served module."""
    def start(module_source: str):
        ep = served_endpoint(module_source)
        return lambda name: ep.request("import", None, name)
    return start
