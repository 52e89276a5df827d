"""Issue 10, item 1: the hidden run may read the hidden test files (it runs them), so everything
it can shape must stay out of a student's report. The attack: the hidden run forges its
runner's lines, spelling the hidden test file in numbers the report used to show (12 bits per
hidden test as its observation count, 48 bits as the suite's `tests_s`: 12 bytes of the file
per submission on this fixture, more on problems with more tests).

Contained: the lines travel through a pipe, in an order the parent checks (a forged line fails
the test it names); a hidden test shows its verdict and label only; the hidden run's timings
stay in the judge's log. A failed hidden test shows one word, "failed" (concealed.py): the
kind (tampered here) is logged too.
"""

from __future__ import annotations

import json
import time

import pytest

from judge.judging.child_log import ChildLog

from grading.test_grade_end_to_end import PROBLEM_DIR, REFERENCE, by_name, run

pytestmark = pytest.mark.usefixtures("sandbox_path")  # cold and warm (tests/sandbox_paths.py)

HIDDEN = ["test_hidden.py::test_update_refreshes", "test_hidden.py::test_capacity_one",
          "test_hidden.py::test_random_ops", "test_hidden.py::test_stats"]

# Writes the forged lines to every place the runner's lines might go: a results file named on
# the command line, and every pipe this process holds.
FORGE = r'''
import json as _j, os as _o, sys as _s
def _targets():
    out = []
    if "--results" in _s.argv:
        out.append(_s.argv[_s.argv.index("--results") + 1])
    for fd in _o.listdir("/proc/self/fd"):
        try:
            if int(fd) > 2 and _o.readlink("/proc/self/fd/" + fd).startswith("pipe:"):
                out.append(int(fd))
        except (OSError, ValueError):
            pass
    return out
def _forge(names):
    a = _s.argv
    suite = a[a.index("--suite-dir") + 1] if "--suite-dir" in a else ""
    if not suite.endswith("hidden"):
        return
    secret = open(_o.path.join(suite, "test_hidden.py"), "rb").read()
    bits = "".join(format(b, "08b") for b in secret[:12])
    lines = [{"ev": "collected", "tests": names}]
    for j, n in enumerate(names):
        lines.append({"ev": "test_started", "test": n, "t": 0})
        lines += [{"ev": "observation", "test": n, "i": i, "label": "x", "value": 0}
                  for i in range(int(bits[12 * j:12 * j + 12], 2))]
        lines.append({"ev": "test_finished", "test": n, "outcome": "passed",
                      "duration_s": int(bits[12 * j:12 * j + 12], 2)})
    lines.append({"ev": "finished", "t": 0, "tests_s": int(bits[48:96], 2)})
    lines.append({"ev": "imported", "t": 0, "import_s": int(bits[48:96], 2)})
    data = "".join(_j.dumps(x) + "\n" for x in lines).encode()
    for t in _targets():
        try:
            if isinstance(t, int):
                _o.write(t, data)
            else:
                with open(t, "ab") as f:
                    f.write(data)
        except OSError:
            pass
_forge(%r)
''' % (HIDDEN,)


def decode(d: dict) -> bytes:
    """What a student could read back out of the report."""
    tests = by_name(d)
    bits = ""
    for n in HIDDEN:
        t = tests["hidden/" + n]
        for value in (t.get("observations"), t.get("time_s")):
            if isinstance(value, (int, float)) and value >= 1:
                bits += format(int(value), "012b")
                break
    phase = (d["timings"].get("phases") or {}).get("hidden") or {}
    for key in ("tests_s", "import_s"):
        if isinstance(phase.get(key), (int, float)) and phase[key] >= 1:
            bits += format(int(phase[key]), "048b")
            break
    return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits) - 7, 8))


def test_forged_hidden_results_spell_nothing_and_fail(problem, cache):
    secret = (PROBLEM_DIR / "tests/hidden/test_hidden.py").read_bytes()
    events = []
    _, d = run(problem, cache, REFERENCE + FORGE,
               on_event=lambda e: events.append(dict(e, at=time.monotonic())))
    leaked = decode(d)
    print(f"\nbytes of the hidden file read back from the report: {len(leaked)}")
    assert leaked == b"" and secret[:12] not in json.dumps(d).encode()
    tests = by_name(d)
    for n in HIDDEN:
        t = tests["hidden/" + n]
        assert t["time_s"] is None and t["observations"] is None
        assert set(t["failure"] or {}) <= {"kind", "label", "exc_type", "line"}
        assert (t["failure"] or {}).get("exc_type") is None
    # the forged lines came before the runner's own, so the tests they name fail
    # (tampered, as the judge's log says: a hidden failure shows one word, test_hidden_states.py)
    assert tests["hidden/" + HIDDEN[0]]["verdict"] == "WA"
    assert tests["hidden/" + HIDDEN[0]]["failure"]["kind"] == "failed"
    assert d["score"] == 0.0 and d["verdict"] == "WA"
    assert all(t["verdict"] == "AC" for t in d["tests"] if t["suite"] == "public")
    assert "hidden" not in d["timings"]["phases"] and "hidden_s" not in d["timings"]
    hidden_events = [e for e in events if e["type"] in ("test_started", "test_finished")
                     and e["test"].startswith("hidden/")]
    assert all(e.get("time_s") is None for e in hidden_events)
    # told in one burst once the suite is over: when each test ran is not streamed either
    assert len(hidden_events) == 2 * len(HIDDEN)
    assert hidden_events[-1]["at"] - hidden_events[0]["at"] < 0.05


def test_forging_from_inside_a_test_fails_that_test(problem, cache):
    """Lines written while a hidden test runs, about that test or the next: both fail."""
    source = REFERENCE + FORGE.replace("_forge(%r)" % (HIDDEN,), "") + r'''
_get = LRUCache.get
def get(self, key):
    if not getattr(LRUCache, "_done", False) and "hidden" in " ".join(_s.argv):
        LRUCache._done = True
        for t in _targets():
            if isinstance(t, int):
                _o.write(t, (_j.dumps({"ev": "test_finished", "test": "%s",
                                       "outcome": "passed"}) + "\n").encode())
    return _get(self, key)
LRUCache.get = get
''' % HIDDEN[0]
    _, d = run(problem, cache, source, suite="hidden")
    tests = by_name(d)
    assert tests["hidden/" + HIDDEN[0]]["verdict"] == "WA"
    assert tests["hidden/" + HIDDEN[0]]["failure"]["kind"] == "failed"  # tampered, logged
    assert [tests["hidden/" + n]["verdict"] for n in HIDDEN[1:]] == ["AC"] * 3


def lines(*events) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def test_the_order_of_lines_decides_not_who_came_first():
    a, b = "t.py::test_a", "t.py::test_b"
    log = ChildLog()
    accepted = log.feed(lines(
        {"ev": "start", "t": 1.0},
        {"ev": "test_started", "test": a, "t": 1.0},              # before collection: forged
        {"ev": "imported", "t": 1.0, "import_s": 0.1},
        {"ev": "imported", "t": 1.0, "import_s": 1e12},           # once only
        {"ev": "collected", "tests": [a, b]},
        {"ev": "test_started", "test": a, "t": 2.0},
        {"ev": "observation", "test": b, "label": "x", "value": 1},  # not b's turn
        {"ev": "test_finished", "test": a, "outcome": "passed"},
        {"ev": "test_started", "test": b, "t": 3.0},
        {"ev": "observation", "test": b, "label": "x", "value": 1},
        {"ev": "test_finished", "test": b, "outcome": "passed"},
        {"ev": "test_finished", "test": b, "outcome": "failed"},  # twice
        {"ev": "finished", "t": 4.0, "tests_s": 1.0},
        {"ev": "finished", "t": 4.0, "tests_s": 1e12}))
    assert log.import_s == 0.1 and log.finished["tests_s"] == 1.0
    assert log.tampered == {a, b}
    assert [e["ev"] for e in accepted].count("test_started") == 2
    assert log.tests[b].observations == [{"label": "x", "value": 1}]
    assert log.tests[b].outcome == "passed"
