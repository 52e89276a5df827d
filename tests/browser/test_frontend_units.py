"""The page's pure JavaScript (the timeline's model, the report's text helpers) under node's own
test runner: no npm package, nothing downloaded. Skipped where node is missing."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from web.settings import REPO_ROOT

TESTS = REPO_ROOT / "web" / "frontend" / "test"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_frontend_units_pass_under_node():
    files = sorted(str(p) for p in TESTS.glob("*.test.mjs"))
    assert files, f"no *.test.mjs in {TESTS}"
    # The sources are ES modules in .js files without "type": "module"; node 20 needs the flag
    # to read them as such (later nodes detect it by themselves and accept the flag).
    run = subprocess.run(["node", "--experimental-detect-module", "--test", *files],
                         capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "# fail 0" in run.stdout and "# pass 0" not in run.stdout, run.stdout[-2000:]
