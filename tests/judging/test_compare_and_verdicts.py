"""Comparison of observation streams, verdict priority, the report's JSON, the child's output
parser and the per-test judging rules, without running anything."""

import json

from judge.judging.child_log import ChildLog, TestRecord
from judge.judging.compare import compare, first_difference
from judge.judging.report import Failure, Report, TestResult
from judge.judging.test_verdict import Context, Redactor, judge_test
from judge.judging.verdict import Verdict, overall


def obs(*pairs):
    return [{"label": label, "value": value} for label, value in pairs]


def test_equal_streams_have_no_divergence():
    assert compare(obs(("a", [1, 2.0, {"k": None}])), obs(("a", [1, 2.0, {"k": None}]))) is None


def test_floats_compare_with_tolerance_and_the_rest_exactly():
    assert first_difference(1.0, 1.0 + 1e-9) is None
    assert first_difference(1e9, 1e9 + 1) is None           # relative 1e-6
    assert first_difference(1.0, 1.001) == ""
    assert first_difference(2.0, 2) is None                  # int vs float: as numbers
    assert first_difference(1, True) == ""                   # bool is not a number here
    assert first_difference(float("nan"), float("nan")) is None
    assert first_difference("a", "b") == ""
    assert first_difference([1, [2, 3]], [1, [2, 4]]) == "[1][1]"
    assert first_difference({"a": 1}, {"a": 1, "b": 2}) == "['b']"
    assert first_difference([1, 2], [1]) == "[1]"


def test_first_divergence_names_label_path_and_values():
    d = compare(obs(("x", 1), ("gets", [1, None, 3])), obs(("x", 1), ("gets", [1, 2, 3])))
    assert (d.index, d.label, d.path, d.reason) == (1, "gets", "[1]", "value")
    assert "gets[1]: expected None, got 2" in d.describe()


def test_missing_extra_and_relabelled_observations():
    assert compare(obs(("a", 1), ("b", 2)), obs(("a", 1))).reason == "missing"
    assert compare(obs(("a", 1), ("b", 2)), obs(("a", 1)), partial=True) is None
    assert compare(obs(("a", 1)), obs(("a", 1), ("z", 9))).reason == "extra"
    assert compare(obs(("a", 1)), obs(("other", 1))).reason == "label"


def test_overall_verdict_priority():
    assert overall([], internal_error=True, compile_error=True) is Verdict.IE
    assert overall(["AC", "WA"], compile_error=True) is Verdict.CE
    assert overall(["AC", "SKIP", "TLE", "WA", "NR"]) is Verdict.TLE
    assert overall(["AC", "SKIP"]) is Verdict.AC


def test_report_hides_hidden_details():
    hidden = Failure("observation", label="lookup", expected=[1], got=[2], message="m",
                     traceback="t", where="w", hidden=True)
    r = Report(verdict=Verdict.WA, score=0.5, problem={"id": "1"}, submission={"sha256": "x"},
               tests=[TestResult("public/a.py::test_a", "public", Verdict.AC),
                      TestResult("hidden/b.py::test_b", "hidden", Verdict.WA, failure=hidden)],
               ie_cause="should never show")
    d = r.to_dict()
    # one fixed word and no label, whatever the hidden test's real kind (judging/concealed.py)
    assert d["tests"][1]["failure"] == {"kind": "failed", "label": None,
                                        "exc_type": None, "line": None}
    assert d["first_failure"]["test"] == "hidden/b.py::test_b"
    assert "should never show" not in json.dumps(d)
    assert d["schema_version"] == 1 and d["verdict"] == "WA"


def test_child_log_ignores_malformed_lines_and_tampers_out_of_order_ones():
    log = ChildLog()
    data = (b'{"ev":"start","t":1}\nnot json\n[1,2]\n{"ev":"bogus"}\n'
            b'{"ev":"collected","tests":["t.py::a","t.py::b","t.py::c"]}\n'
            b'{"ev":"test_started","test":"t.py::a","t":2}\n'
            b'{"ev":"observation","test":"t.py::a","label":"x","value":[1]}\n'
            b'{"ev":"observation","test":"t.py::a","label":7,"value":1}\n'
            b'{"ev":"test_finished","test":"t.py::a","outcome":"passed"}\n'
            b'{"ev":"start","t":9}\n'
            b'{"ev":"test_finished","test":"t.py::b","outcome":"weird"}\n{"ev":"test_st')
    log.feed(data)
    rec = log.tests["t.py::a"]
    assert rec.observations == [{"label": "x", "value": [1]}] and rec.outcome == "passed"
    assert log.started_t == 1 and not log.is_tampered("t.py::a")
    # b finished without starting: out of the runner's order, so b is tampered, not judged
    assert log.is_tampered("t.py::b") and log.running is None
    log.feed(b'arted","test":"t.py::c","t":3}\n')
    assert log.running == "t.py::c"
    # a second finish of a, or a late observation of it, is out of order: a is tampered too
    log.feed(b'{"ev":"observation","test":"t.py::a","label":"late","value":1}\n')
    assert log.is_tampered("t.py::a") and log.tests["t.py::a"].observations == [
        {"label": "x", "value": [1]}]


def _Run():  # a run that ended normally, its lines not out of order
    from judge.judging.child_log import ChildLog
    from judge.judging.run_record import RunRecord

    return RunRecord("public", ChildLog(), spawn_t=0.0, returncode=0, ended=True)


def _ctx(hidden=False):
    return Context(_Run(), hidden=hidden, source="x\n" * 10,
                   redact=Redactor(["secret line of the hidden tests!!"], []), limits={})


def _rec(observations, **finished):
    rec = TestRecord("t.py::a", started_t=1.0, observations=obs(*observations))
    rec.finished = finished or None
    return rec


REF = {"outcome": "passed", "observations": obs(("a", 1), ("b", 2)), "time_s": 0.1}


def test_judging_rules_for_one_test():
    j = lambda rec, **kw: judge_test("public/t.py::a", "public", 1, REF, rec,  # noqa: E731
                                     _ctx(**kw), victim=False)
    assert j(_rec([("a", 1), ("b", 2)], outcome="passed")).verdict is Verdict.AC
    assert j(_rec([("a", 1)], outcome="passed")).verdict is Verdict.WA
    # a divergence before a crash is what is reported
    r = j(_rec([("a", 5)], outcome="failed", kind="student", exc_type="KeyError", line=3))
    assert r.verdict is Verdict.WA and r.failure.label == "a"
    r = j(_rec([("a", 1)], outcome="failed", kind="student", exc_type="KeyError", line=3))
    assert r.verdict is Verdict.RE and r.failure.line == 3
    assert j(_rec([("a", 1)], outcome="failed", kind="assertion")).verdict is Verdict.WA
    assert j(_rec([], outcome="timeout", kind="timeout")).verdict is Verdict.TLE
    assert j(_rec([], outcome="memory", kind="memory")).verdict is Verdict.MLE
    assert j(_rec([("a", 1), ("b", 2)], outcome="skipped")).verdict is Verdict.WA
    assert j(None).verdict is Verdict.NR
    # a line number outside the submission is dropped for hidden tests; the message too
    r = judge_test("hidden/t.py::a", "hidden", 1, REF,
                   _rec([], outcome="failed", kind="student", exc_type="my.Leak", line=999,
                        message="m"), _ctx(hidden=True), victim=False)
    # a hidden test shows no exception type (the submission chooses it), no line, no message
    assert (r.failure.exc_type, r.failure.line, r.failure.message) == (None, None, None)


def test_redactor_removes_secret_lines_but_not_visible_ones():
    redact = Redactor(["x = 1\nvery_secret_expected = [1, 2, 3, 4]\nshared_line_in_both_files()"],
                      ["shared_line_in_both_files()"])
    out = redact("got very_secret_expected = [1, 2, 3, 4] and shared_line_in_both_files()")
    assert "very_secret" not in out and "shared_line_in_both_files()" in out


def test_public_got_values_carrying_secrets_are_redacted():
    ctx = Context(_Run(), hidden=False, source="x\n", limits={},
                  redact=Redactor(["secret line of the hidden tests!!"], []))
    ref = {"outcome": "passed", "observations": obs(("a", "ok")), "time_s": 0.1}
    r = judge_test("public/t.py::a", "public", 1, ref,
                   _rec([("a", "see: secret line of the hidden tests!!")], outcome="passed"),
                   ctx, victim=False)
    assert r.failure.got == "[redacted]" and "secret line" not in r.failure.message
