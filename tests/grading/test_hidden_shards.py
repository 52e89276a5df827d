"""Issue 19: the hidden suite as N shards at once (judge/grading/shards.py) grades exactly as one
unsharded run does. The known submissions of 141-144 (the first accepted one, every sixth wrong one:
known_gradings.compared_files), and submissions that crash, die of a
signal, spin past the parent's clock or allocate past memory in one shard's test file, graded
with JUDGE_SHARDS=1 and =2: the same verdict, per-test verdicts, first failure and hidden
events. An abnormal shard makes the suite run again unsharded (stats["unsharded"]). The known
submissions' gradings are tests/known_gradings.py's, shared with test_warm_same_verdicts.py."""

from __future__ import annotations

import re

import pytest
from known_gradings import compared_files, graded
from lowered_floor import floor_lowered

from judge.grading import shards, warm_pool
from judge.grading.grader import grade
from judge.judging.vocabulary import Event
from judge.problem import ProblemBank

BANK = ProblemBank()
KNOWN = [p for p in BANK.list() if p.name.split("-")[0] in ("141", "142", "143", "144")]
TMP_PATH = re.compile(r"/(?:tmp|\.judge-warm)/[^\s'\"):]*")
# the same split on any host, warm (tests/grading/conftest.py)
pytestmark = pytest.mark.usefixtures("two_cores")


def _graded(problem, source, n: int, monkeypatch) -> dict:
    monkeypatch.setenv("JUDGE_SHARDS", str(n))
    events: list[dict] = []
    with warm_pool.forced(True):
        report = grade(problem, source, device="cpu", on_event=events.append)
    return _summary(report, events)


def _summary(report, events: list[dict]) -> dict:
    # warm, shards included (each shard's thread runs in a copy of this context)
    assert report.provenance["sandbox_layers"].get("grader_path") == "warm"
    d = report.to_dict()
    first = d.get("first_failure") or {}
    hidden = [(e["type"], e["test"], e.get("verdict")) for e in events
              if e.get("type") in (Event.TEST_STARTED, Event.TEST_FINISHED)
              and e["test"].startswith("hidden/")]
    return {"verdict": d["verdict"], "score": d["score"], "test": first.get("test"),
            "kind": first.get("kind"),
            "message": TMP_PATH.sub("<path>", first.get("message") or ""),
            "verdicts": {t["name"]: (t["verdict"], (t.get("failure") or {}).get("kind"))
                         for t in d["tests"]},
            "hidden_events": hidden}


def _same(problem, source, monkeypatch) -> tuple[dict, dict]:
    one = _graded(problem, source, 1, monkeypatch)
    two = _graded(problem, source, 2, monkeypatch)
    assert two == one
    return one, two


def test_the_split_balances_reference_time_and_keeps_the_suites_order():
    ref = {"hidden/a.py::t": {"time_s": 0.6}, "hidden/b.py::t": {"time_s": 0.4},
           "hidden/c.py::t1": {"time_s": 0.1}, "hidden/c.py::t2": {"time_s": 0.05},
           "hidden/d.py::t": {"time_s": 0.02}}
    assert shards.split(["a.py", "b.py", "c.py", "d.py"], ref, 2) == \
        [["a.py"], ["b.py", "c.py", "d.py"]]
    assert shards.split(["a.py", "b.py", "c.py"], {}, 2) == [["a.py", "c.py"], ["b.py"]]


@pytest.mark.parametrize("problem", KNOWN, ids=lambda p: p.name)
def test_every_known_submission_grades_the_same_sharded(problem):
    files = compared_files(problem)
    assert files
    merged = 0
    for path in files:
        one, two = (graded(problem, path, how) for how in ("warm", "sharded"))
        # graded as `judge check` grades (tests/known_gradings.py): the hidden tests' events go
        # out live from each shard, so they are compared as a set here; the student's stream,
        # merged in the suite's order, is compared in order by the tests below (_same)
        one_d, two_d = (_summary(g.report, g.events) for g in (one, two))
        for d in (one_d, two_d):
            d["hidden_events"] = sorted(d["hidden_events"], key=repr)
        assert two_d == one_d, path.name
        assert (one_d["verdict"] == "AC") == (path.parent.name == "accepted"), path.name
        merged += two.merged
    assert merged > 0  # sharded, not quietly unsharded


# Wraps every function and method the submission defines: called from a test of the named
# hidden file, it does the fault. Each fault ends its shard abnormally in a different way.
FAULT = '''
import functools as _ft, inspect as _in, os as _os, signal as _sig, sys as _sys

def _hit():
    f = _sys._getframe(1)
    while f is not None:
        if f.f_code.co_filename.endswith("/hidden/{file}"):
            return True
        f = f.f_back
    return False

def _fault():
    kind = "{kind}"
    if kind == "exit":
        _os._exit(3)
    if kind == "segv":
        _os.kill(_os.getpid(), _sig.SIGSEGV)
    if kind == "spin":
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass
    if kind == "mle":
        hog = [bytearray(64 * 2**20) for _ in range(10 ** 4)]
        return len(hog)

def _wrap(fn):
    @_ft.wraps(fn)
    def w(*a, **k):
        if _hit():
            _fault()
        return fn(*a, **k)
    return w

for _n, _v in list(globals().items()):
    if _n.startswith("_"):
        continue
    if _in.isfunction(_v) and _v.__module__ == __name__:
        globals()[_n] = _wrap(_v)
    elif _in.isclass(_v) and _v.__module__ == __name__:
        for _m, _f in list(vars(_v).items()):
            if _in.isfunction(_f):
                setattr(_v, _m, _wrap(_f))
'''


def _problem(prefix: str):
    return next(p for p in KNOWN if p.name.startswith(prefix))


@pytest.mark.parametrize("kind", ["exit", "segv", "spin", "mle"])
def test_a_shard_that_ends_abnormally_is_charged_as_one_run_charges_it(kind, monkeypatch):
    # the floor lowered for the spin only: the others end at once, and an allocation racing a
    # 1 s floor on a busy host could end as TLE in one of the two gradings and MLE in the other
    problem = floor_lowered(_problem("141"), 1.0 if kind == "spin" else 3.0)
    accepted = problem.submissions("accepted")[0].read_text(encoding="utf-8")
    files = [f.name for f in problem.test_files("hidden")]
    # in the first shard, and in another one; a spin in the last file only: the parent's clock
    # stops a shard whichever it is, and each placement holds three runs for floor + grace
    for file in (files[-1],) if kind == "spin" else (files[0], files[-1]):
        source = accepted + FAULT.replace("{file}", file).replace("{kind}", kind)
        before = dict(shards.stats)
        one, _ = _same(problem, source, monkeypatch)
        assert one["verdict"] != "AC" and one["test"].startswith("hidden/"), (kind, file, one)
        assert shards.stats["unsharded"] == before["unsharded"] + 1, (kind, file)


def test_how_many_shards(monkeypatch):
    problem = _problem("143")
    monkeypatch.delenv("JUDGE_SHARDS", raising=False)
    with warm_pool.forced(True):
        assert shards.shard_count(problem, "cpu", 9, fail_fast=False) == 2  # 2 cores, 1 slot
        assert shards.shard_count(problem, "cpu", 1, fail_fast=False) == 1  # one file
        assert shards.shard_count(problem, "cpu", 9, fail_fast=True) == 1   # --mutate
        assert shards.shard_count(problem, "cuda", 9, fail_fast=False) == 1
        monkeypatch.setattr(shards, "_slots", [2])  # 2 grading threads: a core each
        assert shards.shard_count(problem, "cpu", 9, fail_fast=False) == 1
        monkeypatch.setattr(shards, "_slots", [1])
        monkeypatch.setenv("JUDGE_SHARDS", "1")
        assert shards.shard_count(problem, "cpu", 9, fail_fast=False) == 1
    monkeypatch.setenv("JUDGE_SHARDS", "auto")
    with warm_pool.forced(False):  # cold: a shard would pay a torch import of its own
        assert shards.shard_count(problem, "cpu", 9, fail_fast=False) == 1
