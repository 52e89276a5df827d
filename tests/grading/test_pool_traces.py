"""Pool timelines without a sandbox: what the runner's `traced` pool records, how the judge reads
trace lines, compares two timelines and cuts them to fit a report, and the text diff."""

import itertools
import json
import sys

import pytest
from paths import REPO

from judge.cli.trace_text import trace_lines
from judge.judging.child_log import MAX_TRACE_STEPS, ChildLog
from judge.judging.compare import TRACE_TAIL, cut_trace, trace_diff
from judge.judging.report import Failure, Report, TestResult
from judge.judging.verdict import Verdict
from judge.runner import plugin
from judge.runner.events import EventWriter
from judge.runner.trace import MAX_STEP_BYTES, MAX_STEPS, name_prompts, traced

sys.path.insert(0, str(REPO / "reference"))
from prefix_cache import PrefixCachingBlockPool  # noqa: E402
from tiered import TieredPrefixCachingBlockPool  # noqa: E402
from two_level_lru import TieredKVCache  # noqa: E402

_starts = itertools.count(1)


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """Runs as the runner would inside a test named `t.py::test_x`; returns the trace events."""
    path = tmp_path / "events.jsonl"
    monkeypatch.setattr(plugin.S, "writer", EventWriter(str(path)), raising=False)
    monkeypatch.setattr(plugin.S, "current", "t.py::test_x")
    monkeypatch.setattr(plugin.S, "started_at", next(_starts))  # a new run of the test

    def events():
        lines = path.read_text().splitlines() if path.exists() else []
        return [e for e in map(json.loads, lines) if e["ev"] == "trace"]
    return events


def step(i, result, free=(0, 1), op="lookup"):
    return {"i": i, "pool": 1, "op": op, "args": {"tokens": ["A[0]"]}, "result": result,
            "state": {"free_queue": list(free), "counters": {"num_hits": 0.5}}}


# ---- the runner's side ---------------------------------------------------------------------

def test_traced_pool_records_calls_results_and_state(recorded):
    pool = traced(PrefixCachingBlockPool(3, 2), counters=["num_queries", "num_hits"])
    a = [1, 2, 3, 4, 5]
    name_prompts(pool, {"A": a})
    table = pool.allocate(3)
    pool.cache_blocks(a, table, len(a))
    pool.free(table)
    assert pool.lookup(a + [9]) == [0, 1]          # attributes and results pass through
    pool.block_size = 2                            # so do assignments
    assert pool.block_size == 2 and pool.num_queries == 6
    steps = [e["step"] for e in recorded()]
    assert [e["i"] for e in recorded()] == [0, 1, 2, 3]
    assert [s["op"] for s in steps] == ["allocate", "cache_blocks", "free", "lookup"]
    assert steps[0]["args"] == {"n": 3} and steps[0]["result"] == [0, 1, 2]
    assert steps[1]["args"] == {"tokens": ["A[0]", "A[1]", "+1 tokens"], "blocks": [0, 1, 2],
                                "num_computed": 5}
    assert steps[2]["state"]["free_queue"] == [2, 1, 0]        # freed last block first
    assert steps[2]["state"]["blocks"] == ["A[0]", "A[1]", None]
    # A[0], A[1], then a block of a token list the test never named
    assert steps[3]["args"] == {"tokens": ["A[0]", "A[1]", "#1[2]"]}
    assert steps[3]["state"]["counters"] == {"num_queries": 6, "num_hits": 4}
    assert all(s["pool"] == 1 for s in steps)


def test_host_tier_keys_are_labels_and_pools_are_numbered(recorded):
    first = traced(TieredPrefixCachingBlockPool(1, 2, 2), tiers=["host"])
    second = traced(TieredPrefixCachingBlockPool(1, 2, 2), tiers=["host"])

    class Block(list):
        def clone(self):
            return Block(self)

    class KV:  # one layer, one block
        k, v = [[Block([0.0])]], [[Block([0.0])]]
    first.kv = KV()
    name_prompts(first, {"B": [7, 8]})
    first.cache_blocks([7, 8], first.allocate(1), 2)
    first.free([0])
    first.allocate(1)                              # offloads B[0]
    second.allocate(1)
    steps = [e["step"] for e in recorded()]
    assert steps[3]["state"]["host"] == ["B[0]"] and steps[3]["state"]["blocks"] == [None]
    assert [s["pool"] for s in steps] == [1, 1, 1, 1, 2]


def test_lru_levels(recorded):
    cache = traced(TieredKVCache(1, 1), ops=["access"], levels={"gpu": "gpu_keys",
                                                                "cpu": "cpu_keys"},
                   counters=["num_misses"])
    cache.access("A")
    cache.access("B")
    last = recorded()[-1]["step"]
    assert last == {"pool": 1, "op": "access", "args": {"h": "B"}, "result": "miss",
                    "state": {"gpu": ["B"], "cpu": ["A"], "counters": {"num_misses": 2}}}


def test_unreadable_state_and_raising_calls_never_change_the_test(recorded):
    class Broken:
        block_size = 2

        @property
        def free_queue(self):
            raise RuntimeError("no")

        ref_cnt = object()   # not iterable

        def allocate(self, n):
            if n < 0:
                raise ValueError("negative")
            return [object()]  # not JSON: shown as its type

    pool = traced(Broken(), counters=["num_hits"])
    with pytest.raises(ValueError, match="negative"):
        pool.allocate(-1)
    assert len(pool.allocate(1)) == 1
    raised, ok = (e["step"] for e in recorded())
    assert raised["result"] == {"raised": "ValueError: negative"}
    assert raised["state"]["free_queue"] == "<unreadable: RuntimeError>"
    assert raised["state"]["ref_cnt"] == "<unreadable: TypeError>"
    assert raised["state"]["counters"] == {"num_hits": "<unreadable: AttributeError>"}
    assert ok["result"] == ["object"]


def test_bounds_and_outside_a_test(recorded, monkeypatch):
    class Huge:
        block_size = 1
        free_queue = list(range(100_000))
        ref_cnt = []
        block_hash = []

        def touch(self, blocks):
            return None

    pool = traced(Huge())
    for _ in range(MAX_STEPS + 5):
        pool.touch([1])
    events = recorded()
    assert len(events) == MAX_STEPS
    assert events[0]["step"]["state"] == {"cut": events[0]["step"]["state"]["cut"]}
    assert all(len(json.dumps(e["step"])) <= MAX_STEP_BYTES for e in events)
    monkeypatch.setattr(plugin.S, "current", None)   # between tests: nothing written
    traced(PrefixCachingBlockPool(2, 2)).allocate(1)
    assert len(recorded()) == MAX_STEPS


# ---- the judge's side ----------------------------------------------------------------------

def feed(log, *events):
    log.feed(b"".join(json.dumps(e).encode() + b"\n" for e in events))


def test_results_keep_trace_steps_in_order_and_bounded():
    log = ChildLog()
    feed(log, {"ev": "start"}, {"ev": "collected", "tests": ["a", "b"]},
         {"ev": "test_started", "test": "a", "t": 1},
         {"ev": "trace", "test": "a", "i": 0, "step": {"pool": 1, "op": "lookup", "args": {},
                                                        "result": [1], "state": {}}},
         {"ev": "trace", "test": "a", "i": 1, "step": "not a step"},
         {"ev": "trace", "test": "a", "i": 1, "step": {"op": "free", "state": {"x": "y" * 30000}}},
         {"ev": "test_finished", "test": "a", "outcome": "passed"},
         {"ev": "trace", "test": "a", "i": 2, "step": {"op": "late"}})
    rec = log.tests["a"]
    assert [s["op"] for s in rec.trace] == ["lookup", "free"]
    assert rec.trace[0] == {"i": 0, "pool": 1, "op": "lookup", "args": {}, "result": [1],
                            "state": {}}
    assert rec.trace[1]["state"] == {"cut": "too long"} and rec.trace[1]["i"] == 1
    assert rec.observations == [] and log.is_tampered("a")   # the late line broke the order
    feed(log, {"ev": "test_started", "test": "b", "t": 2},
         *({"ev": "trace", "test": "b", "i": n, "step": {"op": "touch"}}
           for n in range(MAX_TRACE_STEPS + 3)))
    assert len(log.tests["b"].trace) == MAX_TRACE_STEPS


def test_trace_diff_stops_at_the_first_differing_step():
    ref = [step(0, [1]), step(1, [2]), step(2, [3]), step(3, [4])]
    got = [step(0, [1]), step(1, [2], free=(1, 0)), step(2, [9])]
    d = trace_diff(ref, got)
    assert d["diverges_at"] == 1 and d["differs"] == "['state']['free_queue'][0]"
    assert d["expected"] == ref[:2] and d["got"] == got[:2]
    assert d["total"] == {"expected": 4, "got": 3}
    # floats within the observations' tolerance are equal; the step number is not compared
    close = [dict(s, state={**s["state"], "counters": {"num_hits": 0.5 + 1e-9}}) for s in ref]
    assert trace_diff(ref, close)["diverges_at"] is None


def test_trace_diff_missing_steps_and_equal_timelines():
    ref = [step(i, [i]) for i in range(30)]
    short = trace_diff(ref, ref[:5])
    assert short["diverges_at"] == 5 and short["differs"] == ""
    assert short["expected"] == ref[:6] and short["got"] == ref[:5]
    same = trace_diff(ref, list(ref))
    assert same["diverges_at"] is None and same["differs"] is None
    assert same["expected"] == ref[-TRACE_TAIL:] == same["got"]
    assert trace_diff([], [])["expected"] == []


def test_cut_keeps_the_newest_steps():
    d = trace_diff([step(i, [i]) for i in range(10)], [step(i, [i]) for i in range(9)] +
                   [step(9, [0])])
    cut_trace(d, 3)
    assert [s["i"] for s in d["expected"]] == [7, 8, 9] == [s["i"] for s in d["got"]]
    cut_trace(d, 0)
    assert d["expected"] == [] == d["got"]


def report_with(failures):
    tests = [TestResult(f"public/t.py::test_{n}", "public", Verdict.WA, failure=f)
             for n, f in enumerate(failures)]
    return Report(Verdict.WA, 0.0, {"id": "1"}, {"sha256": "x"}, tests=tests)


def test_report_carries_public_traces_only_and_fits_its_cap():
    big = "x" * 3000
    ref = [dict(step(i, [i]), state={"blob": big}) for i in range(200)]
    got = [dict(s) for s in ref[:199]] + [dict(step(199, [0]), state={"blob": big})]
    failures = [Failure("observation", label="l", trace=trace_diff(ref, got)) for _ in range(3)]
    failures.append(Failure("observation", label="secret", hidden=True,
                            trace=trace_diff(ref, got)))
    d = report_with(failures).to_dict()
    assert len(json.dumps(d)) <= 512 * 1024
    first = d["first_failure"]["trace"]
    assert first["diverges_at"] == 199 and first["total"] == {"expected": 200, "got": 200}
    kept = [s["i"] for s in first["expected"]]
    assert kept[-1] == 199 and kept == list(range(200 - len(kept), 200)) and len(kept) < 200
    assert d["tests"][0]["failure"]["trace"]["got"][-1]["result"] == [0]
    assert "trace" not in d["tests"][3]["failure"]   # hidden: never a timeline


def test_text_diff_marks_the_differing_step():
    ref = [step(i, [i]) for i in range(6)]
    got = ref[:5] + [step(5, [7])]
    lines = trace_lines(trace_diff(ref, got), last=3)
    text = "\n".join(lines)
    assert "steps 4-6 of 6" in lines[0] and "3 earlier steps" in text
    assert "lookup(A[0]) *-> [5]" in text and "lookup(A[0]) *-> [7]" in text
    assert text.count(">  6") == 1 and "first differ at step 6, in ['result'][0]" in text
    everything = trace_lines(trace_diff(ref, got), last=None)
    assert all(f"{i}  lookup" in "\n".join(everything) for i in range(1, 6))
    assert "agree in every step" in "\n".join(trace_lines(trace_diff(ref, ref)))


def test_judging_attaches_timelines_to_failing_public_tests_only():
    from judge.judging.child_log import ChildLog, TestRecord
    from judge.judging.run_record import RunRecord
    from judge.judging.test_verdict import Context, Redactor, judge_test

    def Run():  # a run that ended normally
        return RunRecord("public", ChildLog(), spawn_t=0.0, wall_s=1.0, ended=True)

    secret = "assert hidden_value == 12345  # a line of a hidden test"
    ref = {"outcome": "passed", "observations": [{"label": "x", "value": 1}],
           "trace": [step(0, [1]), step(1, [2])]}

    def judged(got_obs, got_trace, hidden=False):
        rec = TestRecord("t.py::test_a", started_t=1.0, observations=got_obs, trace=got_trace,
                         finished={"outcome": "passed", "duration_s": 0.1, "cpu_s": 0.1})
        ctx = Context(Run(), hidden=hidden, source="", redact=Redactor([secret], []),
                      limits=None)
        return judge_test("public/t.py::test_a", "public", 1.0, ref, rec, ctx, victim=False)

    passed = judged([{"label": "x", "value": 1}], [step(0, [9])])
    assert passed.verdict is Verdict.AC and passed.failure is None
    wrong = judged([{"label": "x", "value": 2}], [step(0, [1]), step(1, [secret])])
    trace = wrong.failure.trace
    assert trace["diverges_at"] == 1 and trace["got"][1]["result"] == "[redacted]"
    assert trace["got"][0] == step(0, [1]) and secret not in json.dumps(trace)
    hidden = judged([{"label": "x", "value": 2}], [step(0, [1]), step(1, [3])], hidden=True)
    assert hidden.verdict is Verdict.WA and hidden.failure.trace is None
    assert "trace" not in hidden.failure.to_dict()
