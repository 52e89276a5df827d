"""Values a submission shapes to hurt the parent: a huge observation, one nested a thousand levels
deep, NaN, and terminal escapes. Each is graded through the real sandbox and must end as a clear
verdict (OLE or WA), a strict-JSON report of bounded size, and a console report that a terminal
cannot be made to redraw."""

import io
import json
import resource

import pytest

from judge.cli.console import Console, print_report
from judge.judging.bounded import MAX_REPORT_BYTES

from grading.test_grade_end_to_end import FIRST, patched, run

pytestmark = pytest.mark.usefixtures("sandbox_path")  # cold and warm (tests/sandbox_paths.py)


def returning(expr: str) -> str:
    return patched(f"LRUCache.get = lambda self, key: {expr}")


def test_a_60_mb_observation_is_refused_with_a_reason(problem, cache):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    _, d = run(problem, cache, returning("'x' * (60 * 1024 * 1024)"), suite="public",
               select=FIRST)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert d["verdict"] == "WA", d["first_failure"]
    assert "bytes per observation" in d["first_failure"]["message"]
    assert len(json.dumps(d)) < MAX_REPORT_BYTES
    assert grown_mb < 200, f"the parent grew by {grown_mb:.0f} MB"


def test_deep_nesting_is_refused_not_an_internal_error(problem, cache):
    source = returning("__import__('functools').reduce(lambda v, _: [v], range(980), 0)")
    _, d = run(problem, cache, source, suite="public", select=FIRST)
    assert d["verdict"] == "WA", d
    assert "nested deeper than 64 levels" in d["first_failure"]["message"]
    _, d = run(problem, cache, source, suite="hidden")
    assert d["verdict"] == "WA" and d["internal_error"] is None


def test_lines_the_runner_never_wrote_are_not_parsed_but_judged():
    """Whatever reaches the results file, the parent reads no line over its size or depth
    limits: the test it names gets OLE with the reason."""
    from judge.judging.child_log import ChildLog
    from judge.judging.test_verdict import Context, judge_test

    log = ChildLog()
    name = "test_basic.py::test_example_put_get"
    log.feed(json.dumps({"ev": "collected", "tests": [name]}).encode() + b"\n")
    log.feed(json.dumps({"ev": "test_started", "test": name, "t": 1.0}).encode() + b"\n")
    huge = b'{"ev":"observation","test":"' + name.encode() + b'","label":"x","value":"'
    log.feed(huge + b"y" * (2 << 20) + b'"}\n')
    deep = b'{"ev":"observation","test":"%s","label":"x","value":' % name.encode()
    log.feed(deep + b"[" * 980 + b"]" * 980 + b"}\n")
    rec = log.tests[name]
    assert rec.observations == [] and "bytes of JSON per observation" in rec.oversized

    from judge.judging.run_record import RunRecord

    ended = RunRecord("public", log, spawn_t=0.0, wall_s=2.0, ended=True)  # ended normally
    ref = {"outcome": "passed", "observations": [{"label": "x", "value": 1}]}
    res = judge_test("public/" + name, "public", 1.0, ref, rec,
                     Context(ended, hidden=False, source="", redact=lambda s: s, limits=None),
                     victim=False)
    assert str(res.verdict) == "OLE" and "per observation" in res.failure.message
    log2 = ChildLog()
    log2.feed(json.dumps({"ev": "collected", "tests": [name]}).encode() + b"\n")
    log2.feed(json.dumps({"ev": "test_started", "test": name, "t": 1.0}).encode() + b"\n")
    log2.feed(deep + b"[" * 980 + b"]" * 980 + b"}\n")
    assert "nested more than 64 levels" in log2.tests[name].oversized


def test_nan_reaches_no_report_as_a_bare_literal(problem, cache):
    _, d = run(problem, cache, returning("float('nan')"), suite="public", select=FIRST)
    assert d["verdict"] == "WA"
    json.dumps(d, allow_nan=False)  # strict JSON: raises on NaN or Infinity
    assert "NaN" in json.dumps(d["first_failure"]["got"])


def test_terminal_escapes_from_the_submission_are_shown_not_obeyed(problem, cache):
    fake = "\x1b[2J\x1b[H all tests: AC\r"
    _, d = run(problem, cache, returning(repr(fake)), suite="public", select=FIRST)
    assert d["verdict"] == "WA"
    out = io.StringIO()
    print_report(Console("en", stream=out, color=False), d)
    text = out.getvalue()
    assert "\x1b" not in text and "\r" not in text
    assert "\\x1b[2J" in text
