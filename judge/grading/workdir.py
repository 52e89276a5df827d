"""The files one grading shows its sandboxed children, laid out in a fresh temporary folder:

    <work>/lib/handbook/      the handbook modules the problem lists (never the reference solution)
    <work>/lib/runner/judge_runner/   a copy of judge/runner
    <work>/sub-<who>/<module>.py      the submission ("student") or the reference ("reference")
    <work>/tests/public/  <work>/tests/hidden/     copies of the problem's test folders
    <work>/conf-<run>/limits.json     per-test time limits of one run
    <work>/run-<run>/                 the run's scratch folder (its cwd, the only writable place)

Everything is copied rather than bound in place, so the view is the same whether or not the
sandbox can build a private filesystem. The folder is sealed (sandbox/grants.py): root-only,
with each run's uid let in to what that run mounts, for that run; so without a private
filesystem view one grading's runs still cannot read another's submission or hidden tests.
Its name carries the judge's pid, so the first View of a later judge process removes folders
that a judge which died mid-grading left behind (with any scratch filesystem still mounted).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

from judge.config import settings
from judge.problem import Problem
from judge.sandbox import grants, scratchfs

RUNNER_SRC = Path(__file__).resolve().parent.parent / "runner"
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".*")
_ORPHAN = re.compile(r"^judge-[0-9A-Za-z]+-p(\d+)-")
_LEGACY = re.compile(r"^judge-[0-9A-Za-z]+-[a-z0-9_]{8}$")  # before names carried the pid
LEGACY_AGE_S = 24 * 3600
KEEP_MARK = ".kept"
log = logging.getLogger("judge")
_swept = threading.Event()


def _open_up(path: Path) -> None:
    """Readable files: who may enter their folders is `grants.seal`'s to say. (The root stays
    0700 from mkdtemp until sealed, so nothing inside is reachable in between.)"""
    for dirpath, dirnames, filenames in os.walk(path):
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o644)


class View:
    def __init__(self, problem: Problem, *, keep: bool = False):
        self.problem = problem
        self.keep = keep or settings().keep_workdir
        if not _swept.is_set():
            _swept.set()
            remove_orphans()
        self.root = Path(tempfile.mkdtemp(prefix=f"judge-{problem.id}-p{os.getpid()}-"))
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
        _open_up(self.root)
        self.private = grants.seal(str(self.root))
        if self.keep:  # kept on purpose (to look into): not an orphan once we are gone
            (self.root / KEEP_MARK).touch()

    def submission(self, who: str, source: str) -> Path:
        """Writes `<work>/sub-<who>/<module>.py`; returns the file."""
        folder = self.root / f"sub-{who}"
        folder.mkdir(exist_ok=True)
        path = folder / f"{self.problem.module}.py"
        path.write_text(source, encoding="utf-8")
        _open_up(folder)
        grants.seal(str(self.root), str(folder))
        return path

    def run_dirs(self, run: str, limits: dict[str, float]) -> tuple[Path, Path]:
        """(conf folder holding limits.json, scratch folder) for one run."""
        conf, scratch = self.root / f"conf-{run}", self.root / f"run-{run}"
        conf.mkdir()
        scratch.mkdir()
        (conf / "limits.json").write_text(json.dumps(limits), encoding="utf-8")
        _open_up(conf)
        grants.seal(str(self.root), str(conf), str(scratch))
        return conf, scratch

    def close(self) -> None:
        if not self.keep:
            grants.forget(str(self.root))
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "View":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def remove_orphans(tmp: str | None = None) -> list[str]:
    """Delete grading folders whose judge process is gone (or, named the old way, untouched for
    a day): they hold copies of hidden tests and submissions. Returns what was removed."""
    tmp = tmp or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = os.listdir(tmp)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(tmp, name)
        m = _ORPHAN.match(name)
        try:
            st = os.lstat(path)
            if not os.path.isdir(path) or os.path.islink(path) or st.st_uid != os.geteuid() \
                    or os.path.exists(os.path.join(path, KEEP_MARK)):
                continue
            if m:
                if pid_alive(int(m.group(1))):
                    continue
            elif not (_LEGACY.match(name) and time.time() - st.st_mtime > LEGACY_AGE_S):
                continue
            for mnt in scratchfs.mounted_under(path):
                scratchfs.unmount(mnt)
            shutil.rmtree(path)
            removed.append(path)
        except FileNotFoundError:
            continue  # another grader on this host removed it first
        except OSError as e:
            log.warning("could not remove the orphaned grading folder %s: %s", path, e)
    if removed:
        log.info("removed %d orphaned grading folder(s): %s", len(removed), ", ".join(removed))
    return removed


def pid_alive(pid: int) -> bool:
    """Whether a process of that id exists on this host (owned by anyone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
