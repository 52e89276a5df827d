"""Issue 28, item 4: shards that disagree. A submission runs in every shard of the hidden suite
(judge/grading/shards.py), can tell which one it is in (its runner's targets are in its own
process), and may behave differently in each. Attacks, each graded with JUDGE_SHARDS=1 and =2
on 141 (three hidden files; two shards split them one and two):

- foreign tests: each shard's submission adds the other shard's files to its runner's targets,
  fails every test of its own files and passes those it took in: the merge took each test's
  record from whichever shard came last, so a shard could overwrite another's results (score
  0.0 unsharded, 0.33 sharded, measured before the fix). Now a shard that reports a test
  of a file it was not given is not used: the suite runs again unsharded.
- the scratch disk: each test file writes 24 MiB to the scratch folder and keeps it: one run
  fills its 64 MiB (WA: the third file's write finds it full), but each shard had a 64 MiB
  filesystem of its own, and the shards (24 and 48 MiB) were AC before the fix. Now each of
  N shards gets 1/N of the run's scratch and /tmp, so the shards that fit fit one run too;
  a shard that fills its part is not used.
- the shard it is in: a submission that answers wrong only in the process running the last
  hidden file. Each test's verdict is what the submission did in that test, in the process
  that ran it, so sharded it loses only that shard's tests (0.67); unsharded, all (0.0). What
  this proves: nothing of one shard's reaches another's tests, and the verdict is the same
  on every grading with the same split (docs/SANDBOX.md section 7, "Shards that disagree").
"""

from __future__ import annotations

import pytest

from judge.grading import shards

from grading.test_hidden_shards import _graded, _problem

# the same split on any host, warm, as test_hidden_shards.py (tests/grading/conftest.py)
pytestmark = pytest.mark.usefixtures("two_cores")

# The submission's hidden runs only; its public run is left alone.
COMMON = '''
import gc as _gc, os as _os, sys as _sys

def _runner_args():
    for o in _gc.get_objects():
        if type(o).__name__ == "Namespace" and hasattr(o, "targets") and hasattr(o, "suite_dir"):
            return o
    return None

_ARGS = _runner_args()
_HIDDEN = bool(_ARGS) and _ARGS.suite_dir.rstrip("/").endswith("hidden")
_MINE = set(_ARGS.targets) if _HIDDEN else set()

def _calling_file():
    f = _sys._getframe(2)
    while f is not None:
        if "/hidden/" in f.f_code.co_filename:
            return _os.path.basename(f.f_code.co_filename)
        f = f.f_back
    return None

def _wrap_all(check):
    import functools, inspect
    def wrap(fn):
        @functools.wraps(fn)
        def w(*a, **k):
            check()
            return fn(*a, **k)
        return w
    for n, v in list(globals().items()):
        if inspect.isclass(v) and v.__module__ == __name__ and not n.startswith("_"):
            for m, f in list(vars(v).items()):
                if inspect.isfunction(f):
                    setattr(v, m, wrap(f))
'''

FOREIGN = COMMON + '''
if _HIDDEN:
    _all = sorted(n for n in _os.listdir(_ARGS.suite_dir) if n.startswith("test_"))
    _ARGS.targets[:] = list(_ARGS.targets) + [n for n in _all if n not in _MINE]

def _fail_at_home():
    if _HIDDEN and _calling_file() in _MINE:
        raise RuntimeError("wrong in the shard that owns this file")

_wrap_all(_fail_at_home)
'''

DISK = COMMON + '''
_written = set()

def _fill():
    f = _calling_file()
    if _HIDDEN and f and f not in _written:
        _written.add(f)
        try:
            with open("kept-" + f, "wb") as out:
                out.write(b"x" * (24 << 20))
        finally:  # the parent's disk guard looks every 50 ms: it sees a full disk in this test
            __import__("time").sleep(0.3)

_wrap_all(_fill)
'''

WHERE = COMMON + '''
_LAST = sorted(n for n in _os.listdir(_ARGS.suite_dir) if n.startswith("test_"))[-1] \\
    if _HIDDEN else None

def _wrong_beside_the_last():
    if _HIDDEN and _LAST in _MINE:
        raise RuntimeError("wrong in the process that runs the last file")

_wrap_all(_wrong_beside_the_last)
'''


def _accepted(problem) -> str:
    return problem.submissions("accepted")[0].read_text(encoding="utf-8")


def test_a_shard_cannot_report_the_tests_of_another_shards_files(monkeypatch):
    problem = _problem("141")
    before = dict(shards.stats)
    one = _graded(problem, _accepted(problem) + FOREIGN, 1, monkeypatch)
    two = _graded(problem, _accepted(problem) + FOREIGN, 2, monkeypatch)
    print(f"\nforeign tests: score unsharded {one['score']}, sharded {two['score']}")
    assert one["score"] == 0.0 and one["verdict"] != "AC"
    assert two == one
    assert shards.stats["unsharded"] == before["unsharded"] + 1  # its shards were not used


def test_shards_share_one_runs_scratch_disk(monkeypatch):
    problem = _problem("141")
    one = _graded(problem, _accepted(problem) + DISK, 1, monkeypatch)
    two = _graded(problem, _accepted(problem) + DISK, 2, monkeypatch)
    print(f"\nscratch disk: unsharded {one['verdict']} {one['score']} ({one['kind']}), "
          f"sharded {two['verdict']} {two['score']}")
    assert one["verdict"] != "AC", one  # the third file's write finds the disk full
    assert two == one


def test_a_submission_that_behaves_by_its_shard_is_judged_by_what_it_did(monkeypatch):
    problem = _problem("141")
    files = sorted(f.name for f in problem.test_files("hidden"))
    one = _graded(problem, _accepted(problem) + WHERE, 1, monkeypatch)
    two = _graded(problem, _accepted(problem) + WHERE, 2, monkeypatch)
    again = _graded(problem, _accepted(problem) + WHERE, 2, monkeypatch)
    print(f"\nby its shard: score unsharded {one['score']}, sharded {two['score']}")
    assert again == two  # the same split, the same verdict
    by_file: dict[str, set[str]] = {}
    for name, (verdict, _) in two["verdicts"].items():
        if name.startswith("hidden/"):
            by_file.setdefault(name.split("/", 1)[1].split("::")[0], set()).add(verdict)
    assert all(len(v) == 1 for v in by_file.values()), by_file  # one process, one behaviour
    assert by_file[files[-1]] != {"AC"} and {"AC"} in by_file.values(), by_file
    assert one["score"] == 0.0 and all(
        v != "AC" for n, (v, _) in one["verdicts"].items() if n.startswith("hidden/"))
