"""Issue 17 item 3 / issue 20 item 6: each test is judged once, and what the live stream says of
a test is what the report says. The attack: after a test was decided (AC, sent live), the code
under test writes a line about it, out of order, which marks it tampered (WA). The stream used
to keep its first word (AC) while the report said WA; now the corrected event replaces it.

The per-suite loop (judge/judging/suite_judge.py) is tried directly, with the child's lines fed
in batches as the parent reads them, and end to end through grade() and the sandbox."""

from __future__ import annotations

import json
import time

from judge.judging.child_log import ChildLog
from judge.judging.run_record import RunRecord
from judge.judging.suite_judge import SuiteJudge
from judge.judging.test_id import TestId
from judge.judging.test_verdict import Redactor
from judge.judging.vocabulary import Event

from grading.test_grade_end_to_end import REFERENCE, by_name, run

A, B = "t.py::test_a", "t.py::test_b"
REF = {f"public/{n}": {"outcome": "passed", "observations": [{"label": "x", "value": 1}]}
       for n in (A, B)}


def lines(*events) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def finals(events: list[dict]) -> dict[str, str]:
    """Each test's verdict as the stream leaves it: the last TEST_FINISHED of each."""
    out = {}
    for e in events:
        if e["type"] == Event.TEST_FINISHED:
            out[e["test"]] = e["verdict"]
    return out


def _judge(events: list, hidden: bool = False) -> SuiteJudge:
    return SuiteJudge("public", REF, weight=lambda n: 1.0, hidden=hidden, source="x = 1\n",
                      redact=Redactor([], []), emit=events.append)


def _feed(judge: SuiteJudge, run: RunRecord, *batch) -> None:
    judge.follow(run.log.feed(lines(*batch)), run)


def _start(judge: SuiteJudge, run: RunRecord) -> None:
    _feed(judge, run, {"ev": "start", "t": 1.0}, {"ev": "imported", "t": 1.0, "import_s": 0.1},
          {"ev": "collected", "tests": [A, B]},
          {"ev": "test_started", "test": A, "t": 2.0},
          {"ev": "observation", "test": A, "label": "x", "value": 1},
          {"ev": "test_finished", "test": A, "outcome": "passed"})


def test_a_line_forged_after_a_test_was_decided_replaces_its_live_verdict():
    events: list[dict] = []
    judge = _judge(events)
    run = RunRecord("public", ChildLog(), spawn_t=0.0)
    _start(judge, run)
    assert finals(events) == {"public/" + A: "AC"}  # decided and sent as soon as it ended
    # the next batch: test_b runs and writes a line about test_a, which is over
    _feed(judge, run, {"ev": "test_started", "test": B, "t": 3.0},
          {"ev": "observation", "test": A, "label": "x", "value": 1},
          {"ev": "observation", "test": B, "label": "x", "value": 1},
          {"ev": "test_finished", "test": B, "outcome": "passed"},
          {"ev": "finished", "t": 4.0, "tests_s": 1.0})
    run.ended = True
    out = judge.finish(run)
    report = {t.name: str(t.verdict) for t in out.tests}
    assert report == {"public/" + A: "WA", "public/" + B: "WA"}
    assert all(t.failure.kind == "tampered" for t in out.tests)
    assert finals(events) == report
    sent = [(e["test"], e["verdict"]) for e in events if e["type"] == Event.TEST_FINISHED]
    assert sent == [("public/" + A, "AC"), ("public/" + B, "WA"), ("public/" + A, "WA")]


def test_a_decided_test_is_not_judged_again_when_nothing_about_it_changed(monkeypatch):
    import judge.judging.suite_judge as sj

    judged = []
    real = sj.judge_test
    monkeypatch.setattr(sj, "judge_test", lambda name, *a, **k: judged.append(name) or
                        real(name, *a, **k))
    events: list[dict] = []
    judge = _judge(events)
    run = RunRecord("public", ChildLog(), spawn_t=0.0)
    _start(judge, run)
    _feed(judge, run, {"ev": "test_started", "test": B, "t": 3.0},
          {"ev": "observation", "test": B, "label": "x", "value": 2},
          {"ev": "test_finished", "test": B, "outcome": "passed"},
          {"ev": "finished", "t": 4.0, "tests_s": 1.0})
    out = judge.finish(run)
    assert judged == ["public/" + A, "public/" + B]  # once each
    assert [str(t.verdict) for t in out.tests] == ["AC", "WA"]
    assert len([e for e in events if e["type"] == Event.TEST_FINISHED]) == 2


def test_a_hidden_suite_tells_each_test_once_when_it_is_over():
    events: list[dict] = []
    judge = _judge(events, hidden=True)
    run = RunRecord("public", ChildLog(), spawn_t=0.0)
    _start(judge, run)
    _feed(judge, run, {"ev": "test_started", "test": B, "t": 3.0},
          {"ev": "observation", "test": A, "label": "x", "value": 1})
    assert events == []  # held while the suite runs
    out = judge.finish(run)
    finished = [e for e in events if e["type"] == Event.TEST_FINISHED]
    assert [e["test"] for e in finished] == ["public/" + A, "public/" + B]
    assert finals(events) == {t.name: str(t.verdict) for t in out.tests}


# End to end: the public suite of fixture 001 has two tests. During the second, once the
# parent has read everything the runner wrote so far (the pipe is empty: it has seen the first
# test's end, and judged it at that sample), the submission writes a line about the first.
LATE_FORGE = r'''
import fcntl as _f, json as _j, os as _o, struct as _st, sys as _s, termios as _t, time as _ti
def _pipes():
    out = []
    for fd in _o.listdir("/proc/self/fd"):
        try:
            if int(fd) > 2 and _o.readlink("/proc/self/fd/" + fd).startswith("pipe:"):
                out.append(int(fd))
        except (OSError, ValueError):
            pass
    return out
def _unread(fd):
    return _st.unpack("i", _f.ioctl(fd, _t.FIONREAD, b"\0\0\0\0"))[0]
_init = LRUCache.__init__
def __init__(self, capacity):
    _init(self, capacity)
    if "test_eviction_order" in _o.environ.get("PYTEST_CURRENT_TEST", "") and \
            "public" in " ".join(_s.argv) and not getattr(LRUCache, "_done", False):
        LRUCache._done = True
        for fd in _pipes():
            end = _ti.monotonic() + 5
            while _unread(fd) and _ti.monotonic() < end:
                _ti.sleep(0.02)
        _ti.sleep(1.0)  # the parent samples every 50 ms: it has judged the first test by now
        line = {"ev": "observation", "test": "test_basic.py::test_example_put_get",
                "label": "get after put", "value": [1, None]}
        for fd in _pipes():
            try:
                _o.write(fd, (_j.dumps(line) + "\n").encode())
            except OSError:
                pass
LRUCache.__init__ = __init__
'''


def test_the_stream_and_the_report_agree_under_a_late_forged_line(problem, cache):
    events: list[dict] = []
    report, d = run(problem, cache, REFERENCE + LATE_FORGE, suite="public",
                    on_event=lambda e: events.append(dict(e, at=time.monotonic())))
    tests = by_name(d)
    first = "public/test_basic.py::test_example_put_get"
    assert tests[first]["verdict"] == "WA" and tests[first]["failure"]["kind"] == "tampered"
    assert d["verdict"] == "WA"
    assert finals(events) == {name: t["verdict"] for name, t in tests.items()}
    told = [e["verdict"] for e in events if e["type"] == Event.TEST_FINISHED
            and e["test"] == first]
    # it was decided live (AC) before the forged line came, then corrected
    assert told == ["AC", "WA"], told
    # the correction comes before the suite is over, and "done" is last
    kinds = [e["type"] for e in events]
    assert kinds.index(Event.SUITE_FINISHED) > max(
        i for i, e in enumerate(events) if e["type"] == Event.TEST_FINISHED)
    assert kinds[-1] == Event.DONE


def test_test_ids_read_every_form_of_a_name():
    t = TestId.parse("public/test_x.py::test_f[a/b-1]")
    assert (t.suite, t.node, t.file, t.function, t.param) == (
        "public", "test_x.py::test_f[a/b-1]", "test_x.py", "test_f", "a/b-1")
    assert t.base == "test_x.py::test_f" and t.base_name == "public/test_x.py::test_f"
    assert str(t) == t.name == "public/test_x.py::test_f[a/b-1]"
    bare = TestId.parse("test_x.py::test_g[p/q]")  # a node: the slash is in its parameters
    assert bare.suite == "" and bare.node == "test_x.py::test_g[p/q]" and bare.param == "p/q"
    assert TestId("hidden", "t.py::TestK::test_h").function == "TestK::test_h"
