"""Issue 10, item 9: under the `unshare` fallback (no private filesystem view) a submission read
the grading folders of another submission graded at the same time: its code and its hidden
tests (1 hidden test file, the submission and 8 more files of the fixture's view here; 60 hidden
test files in the issue). Now grading folders are root-only and a run's uid is let in to what it
mounts, for that run only; folders a dead judge left behind are removed at the next start.
`judge worker` / `judge serve` still refuse other people's code without a private filesystem
view (tests/sandbox/test_weak_sandbox.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from judge import grade
from judge.grading.workdir import View, remove_orphans
from judge.sandbox import Limits, grants, probe_layers, run_sandboxed, scratchfs

from grading.test_grade_end_to_end import FIRST, REFERENCE

VICTIM = REFERENCE + "\nimport time\ntime.sleep(2.5)  # SECRET-VICTIM-CODE\n"
LOOT = REFERENCE + r'''
import glob as _g, os as _o, time as _t
def _loot(self, key):
    mine = _o.getcwd().split("/run-")[0]
    found = []
    for _ in range(30):
        for p in _g.glob("/tmp/judge-001-*/**", recursive=True):
            if p.startswith(mine) or not _o.path.isfile(p):
                continue
            try:
                open(p).read()
                found.append(p)
            except OSError:
                pass
        if found:
            break
        _t.sleep(0.1)
    raise RuntimeError("READ %d: %s" % (len(found), found[:5]))
LRUCache.get = _loot
'''

pytestmark = pytest.mark.usefixtures("sandbox_path")  # cold and warm (tests/sandbox_paths.py)


@pytest.fixture
def unshare_only(monkeypatch):
    probe = probe_layers()
    assert probe.layers.get("unshare"), probe.details.get("unshare")
    monkeypatch.setattr(probe, "mode", "unshare")


def test_without_a_private_view_a_run_reads_nothing_of_another_grading(
        problem, cache, unshare_only):
    grade(problem, REFERENCE, cache=cache, suite="public", select=FIRST)  # the cache is warm
    victim = threading.Thread(target=grade, args=(problem, VICTIM), kwargs={"cache": cache})
    victim.start()
    time.sleep(0.8)  # the victim's folder and its runs exist by now
    d = grade(problem, LOOT, cache=cache, suite="public", select=FIRST).to_dict()
    victim.join()
    assert d["provenance"]["sandbox_layers"]["mode"] == "unshare"
    assert d["provenance"]["sandbox_layers"]["private_views"] is True
    assert "READ 0:" in d["first_failure"]["message"], d["first_failure"]["message"]


def test_a_run_is_let_in_for_its_run_only(problem):
    with View(problem) as view:
        secret = view.tests["hidden"] / "test_hidden.py"
        assert all(os.stat(p).st_mode & 0o077 == 0 for p in (view.root, secret.parent))
        _, scratch = view.run_dirs("probe", {})
        code = f"print(len(open({str(secret)!r}).read()))"
        r = run_sandboxed([sys.executable, "-c", code], ro_binds=[str(secret.parent)],
                          scratch=str(scratch), limits=Limits(wall_s=20, cpu_s=20))
        assert r.returncode == 0 and int(r.stdout) > 0, r.stderr
        # afterwards no entry is left for that uid (the next run with it is someone else's)
        for d in (view.root, view.root / "tests", secret.parent):
            assert grants.granted(str(d), r.uid) is None
            assert os.stat(d).st_mode & 0o777 == 0o700


def test_folders_a_dead_judge_left_are_removed(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = tmp_path / f"judge-001-p{dead.pid}-abcd1234"
    live = tmp_path / f"judge-001-p{os.getpid()}-abcd1234"
    for d in (orphan, live):
        (d / "tests" / "hidden").mkdir(parents=True)
        (d / "tests" / "hidden" / "test_x.py").write_text("secret = 1\n")
    (orphan / "run-x").mkdir()
    scratchfs.mount(str(orphan / "run-x"), 1 << 20, 8, 0, 0)
    removed = remove_orphans(str(tmp_path))
    assert removed == [str(orphan)]
    assert not orphan.exists() and live.exists()
    assert not scratchfs.mounted_under(str(orphan))
