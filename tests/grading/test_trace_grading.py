"""Pool timelines and the experiment's chart data through grade() and practice/judge.py, on
problem 143: a wrong submission's first public failure carries both timelines up to where they
part, hidden failures carry none, an accepted submission none at all; the report's experiment
holds the reference's series (the committed file is up to date) and the submission's own only
when its hidden experiment test passed."""

import json
import os
import subprocess
import sys

import pytest
from paths import REPO

from judge import grade, load_problem
from judge.grading.experiment import problem_experiment
from judge.grading.reference_cache import ReferenceCache
from judge.judging.compare import first_difference

PROBLEM = load_problem(REPO / "problems" / "143-tiered-kv-cache")
WRONG = PROBLEM.path / "submissions" / "wrong_answer" / "unprotected_hits.py"
ACCEPTED = PROBLEM.path / "submissions" / "accepted" / "chapter_walkthrough.py"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return ReferenceCache(tmp_path_factory.mktemp("ref143-traces"))


@pytest.fixture(scope="module")
def wrong(cache):
    report = grade(PROBLEM, WRONG.read_text(), cache=cache)
    assert report.ie_cause is None, report.ie_cause
    return report.to_dict()


def without_number(step):
    return {k: v for k, v in step.items() if k != "i"}


def test_first_public_failure_has_both_timelines_up_to_where_they_part(wrong):
    ff = wrong["first_failure"]
    assert wrong["verdict"] == "WA" and ff["test"].startswith("public/")
    trace = ff["trace"]
    assert set(trace) == {"expected", "got", "diverges_at", "differs", "total"}
    d = trace["diverges_at"]
    assert isinstance(d, int) and trace["expected"][-1]["i"] == d == trace["got"][-1]["i"]
    for e, g in zip(trace["expected"], trace["got"]):
        assert set(e) == {"i", "pool", "op", "args", "result", "state"}
        same = first_difference(without_number(e), without_number(g)) is None
        assert same == (e["i"] < d), e["i"]
    assert trace["differs"] == first_difference(without_number(trace["expected"][-1]),
                                                without_number(trace["got"][-1]))
    assert {"free_queue", "ref_cnt", "blocks", "host", "counters"} <= set(
        trace["expected"][-1]["state"])
    entry = next(t for t in wrong["tests"] if t["name"] == ff["test"])
    assert entry["failure"]["trace"] == trace
    failing_public = [t for t in wrong["tests"] if t["suite"] == "public" and t["failure"]]
    assert all(t["failure"]["trace"] for t in failing_public)


def test_hidden_failures_have_no_timeline(wrong):
    hidden = [t for t in wrong["tests"] if t["suite"] == "hidden"]
    failed = [t for t in hidden if t["failure"] is not None]
    assert failed, "unprotected_hits.py fails a hidden test (its header says so)"
    for t in failed:
        assert "trace" not in t["failure"] and set(t["failure"]) == {"kind", "label",
                                                                    "exc_type", "line"}


def test_experiment_series(wrong, cache):
    exp = wrong["experiment"]
    committed = problem_experiment(PROBLEM)
    assert committed is not None and committed["yours"] is None
    assert exp["reference"] == committed["reference"], "run python -m judge.grading.experiment 143"
    assert [s["run"] for s in exp["reference"]] == ["no cache", "GPU only", "tiered"]
    assert all(len(s["per_turn"]) == 3 for s in exp["reference"])
    verdict = next(t["verdict"] for t in wrong["tests"] if t["name"] == exp["test"])
    assert (exp["yours"] == exp["reference"]) if verdict == "AC" else exp["yours"] is None


def test_accepted_submission_has_no_timeline_and_its_own_series(cache):
    d = grade(PROBLEM, ACCEPTED.read_text(), cache=cache).to_dict()
    assert d["verdict"] == "AC" and d["first_failure"] is None
    assert all(t["failure"] is None for t in d["tests"])
    assert d["experiment"]["yours"] == d["experiment"]["reference"]


def practice(tmp_path, *args):
    env = dict(os.environ, KVPRACTICE_CACHE=str(tmp_path / "cache"), NO_COLOR="1",
               KVPRACTICE_WORKSPACE=str(tmp_path / "ws"))
    return subprocess.run([sys.executable, str(REPO / "practice" / "judge.py"), "test", "143",
                           str(WRONG), "--public", "--lang", "en", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def test_cli_prints_the_last_steps_and_all_with_trace(tmp_path):
    data = json.loads(practice(tmp_path, "--json").stdout)
    trace = data["first_failure"]["trace"]
    n = trace["diverges_at"] + 1   # steps are numbered from 1, as on the page
    short = practice(tmp_path).stdout
    assert f"Pool timeline, steps {n - 3}-{n} of" in short
    assert f">{n:>3}  expected / got:" in short and f"first differ at step {n}" in short
    assert f"{n - 4:>6}  " not in short and "earlier steps not shown" in short
    full = practice(tmp_path, "--trace").stdout
    assert f"Pool timeline, steps 1-{n} of" in full and "earlier steps" not in full
    step0 = trace["expected"][0]
    assert f"     1  {step0['op']}(" in full
