"""Issue 20, item 4: each hidden test was a channel of about 3 bits. The submission can read the
hidden tests, and steer each one into the state of its choice: a verdict (WA RE TLE MLE OLE NR),
a failure kind (observation, exception, timeout, memory, output, crash, tampered, not_run) and
the label of the observation that differs first. Shown in the report, the events or the web
API, each choice spells out part of what the hidden run read.

The attack, through the real sandbox and the web platform: one submission per state, each
steering the hidden test `test_capacity_one` (and, where the run dies, the tests after it)
into that state. Contained: every front end shows a failed hidden test as WA with the one
failure kind "failed" and no label; what it really was is in the judge's log only.
"""

from __future__ import annotations

import io
import json
import logging
import math
import time

import pytest
from fastapi.testclient import TestClient

from judge import grade
from judge.cli.console import Console, print_report
from web.app import create_app

from grading.test_grade_end_to_end import REFERENCE
from web_platform.test_api import make_settings

TARGET = "hidden/test_hidden.py::test_capacity_one"

# Only the hidden run, only the one test that makes an LRUCache(1) there.
HOOK = r'''
import json as _j, os as _o, sys as _s, time as _t
_HIDDEN = "hidden" in " ".join(_s.argv)
_init = LRUCache.__init__
def _steered(self, capacity):
    _init(self, capacity)
    if _HIDDEN and capacity == 1:
        _act(self)
LRUCache.__init__ = _steered
def _pipes():
    for fd in _o.listdir("/proc/self/fd"):
        try:
            if int(fd) > 2 and _o.readlink("/proc/self/fd/" + fd).startswith("pipe:"):
                yield int(fd)
        except (OSError, ValueError):
            pass
'''

ACTS = {
    "pass": "pass",
    "wrong value (label 'keys')": "self.keys = lambda: ['not', 'these']",
    "wrong value (label 'len')": "LRUCache.__len__ = lambda s: 7",
    "raise": "raise ValueError('chosen')",
    "sleep": "_t.sleep(120)",
    "allocate": "self.hog = [b'\\x01' * (1 << 20) for _ in range(4096)]",
    "print": "[print('spam ' * 1000, flush=True) for _ in range(200)]",
    "forge a line": ("[_o.write(fd, (_j.dumps({'ev': 'test_finished', 'test': "
                     "'test_hidden.py::test_capacity_one', 'outcome': 'passed'}) + '\\n')"
                     ".encode()) for fd in _pipes()]"),
    "exit": "_o._exit(3)",
}


def submission(act: str) -> str:
    return REFERENCE + HOOK + f"def _act(self):\n    {act}\n"


def states(rows) -> int:
    return len({json.dumps(r, sort_keys=True) for r in rows})


@pytest.mark.slow
def test_every_steered_hidden_state_shows_the_same_word(problem, cache, tmp_path,
                                                        caplog):
    graded: dict[str, dict] = {}

    def grader(_problem, code, on_event):  # the web platform's grader, on the fixture 001
        report = grade(problem, code, cache=cache, on_event=on_event)
        graded[code] = report
        return report.to_dict()

    caplog.set_level(logging.INFO, logger="judge")
    app = create_app(make_settings(tmp_path), grader=grader, workers=1)
    seen = {}
    with TestClient(app) as client:
        for name, act in ACTS.items():
            code = submission(act)
            start = len(caplog.records)
            sid = client.post("/api/submissions", json={"problem": "901", "code": code}).json()["id"]
            deadline = time.monotonic() + 240
            while (body := client.get(f"/api/submissions/{sid}").json())["status"] != "done":
                assert time.monotonic() < deadline, f"{name}: not graded"
                time.sleep(0.1)
            with client.stream("GET", f"/api/submissions/{sid}/events") as s:
                data = [json.loads(ln[6:]) for ln in s.iter_lines() if ln.startswith("data: ")]
            logged = [r.getMessage() for r in caplog.records[start:]
                      if r.name == "judge" and r.getMessage().startswith("hidden test ")]
            out = io.StringIO()
            print_report(Console(lang="en", stream=out, color=False), body["report"])
            seen[name] = dict(api=body, events=data, logged=logged, cli=out.getvalue(),
                              report=graded[code].to_dict())

    before, after, before_all, after_all, overall = [], [], [], [], {}
    for name, s in seen.items():
        report, api = s["report"], s["api"]["report"]
        assert api == json.loads(json.dumps(report)), name  # the web API stores it as it is
        t = {x["name"]: x for x in api["tests"]}
        hidden = [x for x in api["tests"] if x["suite"] == "hidden"]
        assert all(x["verdict"] == "AC" for x in api["tests"] if x["suite"] == "public"), name
        # what a student could read about each hidden test, anywhere
        for x in hidden:
            shown = {"verdict": x["verdict"], "failure": x["failure"], "time_s": x["time_s"],
                     "observations": x["observations"]}
            after_all.append({"test": x["name"], **shown})
            assert x["failure"] in (None, {"kind": "failed", "label": None, "exc_type": None,
                                           "line": None}), (name, x)
            assert (x["verdict"] == "AC") == (x["failure"] is None), (name, x)
        after.append({k: t[TARGET][k] for k in ("verdict", "failure")})
        ev = [e for e in s["events"] if str(e.get("test", "")).startswith("hidden/")]
        assert [e["test"] for e in ev if e["type"] == "test_finished"] == [x["name"] for x in hidden]
        assert [e["test"] for e in ev if e["type"] == "test_started"] == [x["name"] for x in hidden]
        for e in ev:
            assert set(e) <= {"type", "test", "verdict", "time_s", "attempt"} and e.get("time_s") is None
            if e["type"] == "test_finished":
                assert e["verdict"] == t[e["test"]]["verdict"], (name, e)
        if api["first_failure"] is not None:
            ff = api["first_failure"]
            assert ff["test"].startswith("hidden/") and ff["kind"] == "failed", (name, ff)
            assert ff["verdict"] == "WA" and ff["label"] is None
        for word in ("tampered", "timeout", "memory", "crash", "exception", "observation",
                     "not_run", "chosen", "keys", "len"):
            assert f'"{word}"' not in json.dumps(api) and f'"{word}"' not in json.dumps(s["events"])
        assert "failed" in s["cli"] if name != "pass" else "failed" not in s["cli"]
        for word in ("TLE", "MLE", "OLE", "RE ", "NR", "tampered", "label"):
            assert word not in s["cli"].replace(f"Verdict: {api['verdict']}", ""), (name, word)
        overall[name] = api["verdict"]
        # what the report showed before: the verdict, kind and label the judge's log now keeps
        real = dict(m.removeprefix("hidden test ").split(": ", 1) for m in s["logged"])
        before.append(real.get(TARGET, "AC"))
        before_all += [{"test": x["name"], "shown": real.get(x["name"], "AC")} for x in hidden]

    n_before, n_after = states(before), states(after)
    per_test_before = states(before_all) / len({r["test"] for r in before_all})
    print(f"\n{TARGET}: {n_before} distinguishable states before "
          f"({math.log2(n_before):.2f} bits), {n_after} after ({math.log2(n_after):.2f} bits)")
    print(f"all hidden tests: {states(before_all)} (test, state) pairs before, "
          f"{states(after_all)} after, over {len(ACTS)} submissions "
          f"(~{per_test_before:.1f} states per test before)")
    print("logged:", sorted(set(before)))
    print("overall verdicts:", overall)
    assert n_before >= 8 and n_after == 2
    # the overall verdict: WA for a hidden-only failure, MLE only where the hidden run's memory
    # cgroup (the parent's measurement) stopped it
    assert overall["pass"] == "AC"
    assert {v for k, v in overall.items() if k not in ("pass", "allocate")} == {"WA"}, overall
    assert overall["allocate"] in ("WA", "MLE")
