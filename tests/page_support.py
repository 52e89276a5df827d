"""The page's runner as Pyodide runs it, in a child CPython: its sys.path holds only the judge
files the front end bundles (`judge.browser.page_run.page_files()`), pytest with what it needs, and the
standard library (`-S -s`: no site-packages, so no torch or numpy either, as in the browser).
Hash randomisation is off, as in the sandbox (suite_run.py) and the page (worker.js): what a
set or dict of str holds comes out in the same order in all three.
Importing anything else of the judge fails there, which is the proof that the list is whole.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

from paths import REPO

from judge.browser.page_run import page_files

# pytest and its dependencies here (the page loads the same ones, but pygments, as wheels)
PYTEST_DISTRIBUTIONS = ("pytest", "pluggy", "iniconfig", "packaging", "pygments")

CHILD = r"""
import json, sys
sys.path[:0] = sys.argv[1:]
from judge.browser import page_run
specs = json.loads(sys.stdin.read())
results = [page_run.run(spec) for spec in specs]
outside = sorted(name for name, m in sys.modules.items() if name.startswith("judge")
                 and not (getattr(m, "__file__", None) or "").startswith(sys.argv[1]))
sys.stdout.write(json.dumps({"results": results, "outside": outside,
                             "torch": "torch" in sys.modules}))
"""


def page_root(folder: Path) -> Path:
    """A folder with `page/` (the listed judge files, nothing else) and `site/` (pytest)."""
    page, site = folder / "page", folder / "site"
    for rel in page_files():
        (page / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / rel, page / rel)
    site.mkdir(parents=True, exist_ok=True)
    for name in PYTEST_DISTRIBUTIONS:
        dist = importlib.metadata.distribution(name)
        tops = {f.parts[0] for f in dist.files or ()
                if f.parts[0] not in ("..", "__pycache__") and not f.parts[0].endswith(
                    (".dist-info", ".pth"))}
        for top in tops:
            target = Path(dist.locate_file(top))
            if target.exists() and not (site / top).exists():
                (site / top).symlink_to(target)
    return folder


@cache
def default_root() -> Path:
    """One page folder for this test process (removed with the system's temporary files)."""
    return page_root(Path(tempfile.mkdtemp(prefix="page-run-")))


def run_page(root: Path, specs: list[dict], timeout_s: float = 600) -> list[dict]:
    """Runs each spec through `judge.browser.page_run.run` in one child process, in order."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHON"))}
    env["PYTHONHASHSEED"] = "0"
    work = root / "work"
    work.mkdir(exist_ok=True)
    specs = [dict(s, workdir=str(work / "run")) for s in specs]
    proc = subprocess.run([sys.executable, "-S", "-s", "-P", "-c", CHILD, str(root / "page"),
                           str(root / "site")], input=json.dumps(specs), capture_output=True,
                          text=True, timeout=timeout_s, cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout)
    assert out["outside"] == [], f"the page runner imported {out['outside']} from elsewhere"
    assert not out["torch"]
    return out["results"]


def page_spec(problem, source: str, expected, python: str | None = None) -> dict:
    """What the page sends its worker for a Run (web/frontend/src/run_submit.js)."""
    return {"module": problem.module, "source": source, "tests": problem.public_files(),
            "handbook": problem.handbook_sources(), "expected": expected,
            "weights": {t.name: t.weight for t in problem.tests("public")}, "python": python}
