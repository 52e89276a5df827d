"""The files one grading shows its sandboxed children, laid out in a fresh temporary folder:

    <work>/lib/handbook/      the handbook modules the problem lists (never the reference solution)
    <work>/lib/runner/judge_runner/   a copy of judge/runner
    <work>/sub-<who>/<module>.py      the submission ("student") or the reference ("reference")
    <work>/tests/public/  <work>/tests/hidden/     copies of the problem's test folders
    <work>/conf-<run>/limits.json     per-test time limits of one run
    <work>/run-<run>/                 the run's scratch folder (its cwd, the only writable place)

Everything is copied rather than bound in place, so the view is the same whether or not the
sandbox can build a private filesystem, and readable by the sandbox's unprivileged user.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from .problem import Problem

RUNNER_SRC = Path(__file__).resolve().parent / "runner"
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")


def _open_up(path: Path) -> None:
    """World-readable (and traversable) so a sandbox running as another uid can read it."""
    for dirpath, dirnames, filenames in os.walk(path):
        os.chmod(dirpath, 0o755)
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o644)


class View:
    def __init__(self, problem: Problem, *, keep: bool = False):
        self.problem = problem
        self.keep = keep or bool(os.environ.get("JUDGE_KEEP_WORKDIR"))
        self.root = Path(tempfile.mkdtemp(prefix=f"judge-{problem.id}-"))
        os.chmod(self.root, 0o755)
        self.handbook = self.root / "lib" / "handbook"
        self.runner_parent = self.root / "lib" / "runner"
        self.handbook.mkdir(parents=True)
        for src in problem.handbook_paths:
            if src.is_dir():
                shutil.copytree(src, self.handbook / src.name, ignore=_IGNORE)
            else:
                shutil.copy2(src, self.handbook / src.name)
        shutil.copytree(RUNNER_SRC, self.runner_parent / "judge_runner", ignore=_IGNORE)
        self.tests: dict[str, Path] = {}
        for suite in ("public", "hidden"):
            src = problem.suite_dir(suite)
            if src.is_dir():
                self.tests[suite] = self.root / "tests" / suite
                shutil.copytree(src, self.tests[suite], ignore=_IGNORE)
        _open_up(self.root / "lib")
        if (self.root / "tests").is_dir():
            _open_up(self.root / "tests")

    def submission(self, who: str, source: str) -> Path:
        """Writes `<work>/sub-<who>/<module>.py`; returns the file."""
        folder = self.root / f"sub-{who}"
        folder.mkdir(exist_ok=True)
        path = folder / f"{self.problem.module}.py"
        path.write_text(source, encoding="utf-8")
        _open_up(folder)
        return path

    def run_dirs(self, run: str, limits: dict[str, float]) -> tuple[Path, Path]:
        """(conf folder holding limits.json, scratch folder) for one run."""
        conf, scratch = self.root / f"conf-{run}", self.root / f"run-{run}"
        conf.mkdir()
        scratch.mkdir()
        (conf / "limits.json").write_text(json.dumps(limits), encoding="utf-8")
        _open_up(conf)
        return conf, scratch

    def close(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "View":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
