"""Issue 20, item 3: what the submission writes on the results pipe decides what the parent
keeps. 63 in-order lines just under 1 MB each of `{}` took the parent (and the web server that
grades in its own process) from 252 MB to 3.2 GB: each line was under the per-line cap, so each
was parsed and kept. A 63 MB line without a newline, trickled in, was copied whole at every
sample (35 times the child's CPU in the parent).

Contained: a run keeps at most MAX_RUN_VALUES values / MAX_RUN_BYTES bytes of observations and
trace steps (the test past them is OLE), and an unfinished line is dropped as soon as it passes
MAX_LINE_BYTES. Measured here with tracemalloc in the parent and its own CPU time.
"""

from __future__ import annotations

import json
import time
import tracemalloc

from judge.judging.bounded import MAX_LINE_BYTES, MAX_RUN_VALUES, nesting_depth
from judge.judging.child_log import ChildLog

from grading.test_grade_end_to_end import REFERENCE, run

TEST = "t.py::test_a"


def lines(*events) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


def opened() -> ChildLog:
    log = ChildLog()
    log.feed(lines({"ev": "start", "t": 0}, {"ev": "collected", "tests": [TEST, "t.py::b"]},
                   {"ev": "test_started", "test": TEST, "t": 0}))
    return log


def empty_dicts_line(size: int = MAX_LINE_BYTES - 100) -> bytes:
    head = b'{"ev":"observation","test":"%s","label":"x","value":[' % TEST.encode()
    body = b",".join([b"{}"] * ((size - len(head) - 2) // 3))
    return head + body + b"]}\n"


def test_63_lines_of_empty_dicts_cost_the_parent_megabytes_not_gigabytes():
    log = opened()
    line = empty_dicts_line()
    assert len(line) <= MAX_LINE_BYTES
    tracemalloc.start()
    try:
        t = time.process_time()
        for _ in range(63):
            log.feed(line)
        cpu = time.process_time() - t
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"\n63 lines of {len(line):,} bytes: parent keeps {kept / 1e6:.1f} MB "
          f"(peak {peak / 1e6:.1f} MB), {cpu:.2f}s of its CPU")
    assert kept < 16e6 and peak < 80e6  # was 1,596 MB kept (3.8 GB RSS) before the bound
    assert "in all" in log.tests[TEST].oversized
    # the runner's own lines still come through: the test ends and the next one starts
    log.feed(lines({"ev": "test_finished", "test": TEST, "outcome": "passed"},
                   {"ev": "test_started", "test": "t.py::b", "t": 1}))
    assert log.tests[TEST].outcome == "passed" and log.running == "t.py::b"


def test_a_run_keeps_legitimate_observations_up_to_its_bound():
    log = opened()
    value = list(range(1000))
    n = MAX_RUN_VALUES // 1010  # each line: its 1,000 values and the envelope
    log.feed(lines(*[{"ev": "observation", "test": TEST, "label": f"o{i}", "value": value}
                     for i in range(n)]))
    assert len(log.tests[TEST].observations) == n and log.tests[TEST].oversized is None


def test_an_endless_line_trickled_in_is_dropped_at_the_cap():
    log = opened()
    head = b'{"ev":"observation","test":"%s","label":"x","value":"' % TEST.encode()
    piece = b"a" * 65536
    tracemalloc.start()
    try:
        t = time.process_time()
        log.feed(head)
        for _ in range(63 * 16):  # 63 MB, 64 KB a sample
            log.feed(piece)
        cpu = time.process_time() - t
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"\n63 MB without a newline: parent keeps {kept / 1e6:.2f} MB "
          f"(peak {peak / 1e6:.2f} MB), {cpu:.3f}s of its CPU")
    assert peak < 3 * MAX_LINE_BYTES and cpu < 1.0  # was 29 s of CPU, 132 MB peak
    assert "more than" in log.tests[TEST].oversized
    # the dropped line ends at its newline; what follows is read again
    log.feed(b'"}\n' + lines({"ev": "test_finished", "test": TEST, "outcome": "passed"}))
    assert log.tests[TEST].outcome == "passed" and log.tests[TEST].observations == []


def test_a_line_naming_a_test_that_never_started_makes_no_record():
    log = opened()
    junk = b'{"ev":"observation","test":"forged::%d","value":"' + b"a" * MAX_LINE_BYTES + b'"}\n'
    for i in range(50):
        log.feed(junk.replace(b"%d", str(i).encode()))
    assert set(log.tests) == {TEST}


def test_nesting_depth_is_fast_on_a_megabyte_of_brackets():
    line = empty_dicts_line()
    t = time.process_time()
    for _ in range(20):
        assert nesting_depth(line, 67) == 3
    assert (time.process_time() - t) / 20 < 0.02  # the byte loop took 33 ms a megabyte
    assert nesting_depth(b'{"a":"[[[[","b":[[{}]]}', 67) == 4
    assert nesting_depth(b"[" * 100, 67) == 67 and nesting_depth(b"[]" * 10 + b"]", 67) == 1


FLOOD = REFERENCE + r'''
import json as _j, os as _o
def _pipes():
    for fd in _o.listdir("/proc/self/fd"):
        try:
            if int(fd) > 2 and _o.readlink("/proc/self/fd/" + fd).startswith("pipe:"):
                yield int(fd)
        except (OSError, ValueError):
            pass
_get = LRUCache.get
def get(self, key):
    if not getattr(LRUCache, "_done", False):
        LRUCache._done = True
        name = _o.path.basename(_o.environ["PYTEST_CURRENT_TEST"].rsplit(" ", 1)[0])
        head = ('{"ev":"observation","test":%s,"label":"x","value":[' % _j.dumps(name)).encode()
        line = head + b",".join([b"{}"] * ((1 << 20) // 3 - 100)) + b"]}\n"
        for fd in _pipes():
            try:
                for _ in range(63):
                    _o.write(fd, line)
            except OSError:
                pass
    return _get(self, key)
LRUCache.get = get
'''


def test_a_submission_flooding_the_pipe_is_ole_and_the_parent_stays_small(problem, cache):  # noqa: E501
    run(problem, cache, REFERENCE, suite="public")  # the reference's run, cached
    tracemalloc.start()
    try:
        _, d = run(problem, cache, FLOOD, suite="public")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"\nparent's peak while grading the flood: {peak / 1e6:.1f} MB")
    first = d["tests"][0]
    assert first["verdict"] == "OLE", first
    assert "in all" in first["failure"]["message"]
    assert peak < 150e6
    assert all(t["verdict"] == "AC" for t in d["tests"][1:])
