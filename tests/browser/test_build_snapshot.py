"""The build's snapshot of the page's Python (issue 19: web/frontend/src/make_snapshot.js), checked
under node on the very Pyodide files the page serves: it restores, pytest and the page runner are
already imported, hash randomisation is off as in the sandbox, and nothing of the build machine
is in it (node names the program after the build script's path; the build renames it as a
browser does, and the repository's path appears nowhere in its memory).

The browser restoring it and Running the same as a cold start is tests/e2e/test_page_start.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from web.settings import REPO_ROOT, STATIC_DIR

VENDOR = STATIC_DIR / "vendor"
SNAPSHOTS = sorted((VENDOR / "snapshot").glob("*.memory"))

pytestmark = pytest.mark.skipif(shutil.which("node") is None or not SNAPSHOTS,
                                reason="node or the front-end build (its snapshot) is missing")

RESTORE = """
const [pyodideDir, memory] = process.argv.slice(2);
const { loadPyodide } = await import(pyodideDir + "pyodide.mjs");
const { readFileSync } = await import("node:fs");
const py = await loadPyodide({ indexURL: pyodideDir, env: { HOME: "/home/pyodide", PYTHONHASHSEED: "0" },
                               _loadSnapshot: readFileSync(memory) });
console.log(py.runPython(`import json, os, sys
json.dumps({"modules": [m for m in ("pytest", "judge.browser.page_run") if m in sys.modules],
            "hash_randomization": sys.flags.hash_randomization, "program": os.environ.get("_"),
            "orig_argv": sys.orig_argv, "cwd": os.getcwd()})`));
"""


def test_one_snapshot_per_build_with_its_files_beside_it():
    assert len(SNAPSHOTS) == 1, SNAPSHOTS  # the build deletes another build's
    assert SNAPSHOTS[0].with_suffix(".files").is_file()


def test_the_builds_snapshot_restores_imported_and_holds_nothing_of_the_build_machine(tmp_path):
    memory = SNAPSHOTS[0]
    assert str(REPO_ROOT).encode() not in memory.read_bytes()
    script = tmp_path / "restore.mjs"
    script.write_text(RESTORE)
    out = subprocess.run(["node", str(script), f"{VENDOR / 'pyodide'}/", str(memory)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["modules"] == ["pytest", "judge.browser.page_run"], seen
    assert seen["hash_randomization"] == 0
    assert seen["program"] == "./this.program" and seen["orig_argv"] == ["./this.program"], seen
    assert seen["cwd"] == "/home/pyodide"
