"""The experiment's chart data (judge/grading/experiment.py): the committed reference series a problem
page shows, and the report's `yours`, given only when the hidden experiment test passed."""

from types import SimpleNamespace

from judge import load_problem
from judge.grading.experiment import problem_experiment, report_experiment, series_of
from judge.judging.child_log import TestRecord
from judge.judging.report import TestResult
from judge.judging.verdict import Verdict

NAME = "hidden/test_experiment.py::test_chapter_experiment"
LABEL = "tokens computed per turn: no cache, GPU only, tiered"


def obs(value, label=LABEL):
    return [{"label": "replies identical", "value": True}, {"label": label, "value": value}]


def test_series_of_reads_the_labelled_observation_only():
    assert series_of(obs([[5, 6], [4, 3], [4, 1]])) == (LABEL, [
        {"run": "no cache", "per_turn": [5, 6]}, {"run": "GPU only", "per_turn": [4, 3]},
        {"run": "tiered", "per_turn": [4, 1]}])
    assert series_of(obs([[5, 6], [4, 3]])) is None            # a run short
    assert series_of(obs([[5, "6"], [4, 3], [4, 1]])) is None   # not counts
    assert series_of(obs([[True], [1], [1]])) is None
    assert series_of(obs([[1], [1], [1]], label="another")) is None


def test_committed_series_of_the_problems():
    e143, e144 = problem_experiment(load_problem("143")), problem_experiment(load_problem("144"))
    assert [s["run"] for s in e143["reference"]] == ["no cache", "GPU only", "tiered"]
    assert [s["run"] for s in e144["reference"]] == ["no cache", "write-back", "write-through"]
    for e in (e143, e144):
        assert e["yours"] is None and e["label"] == "tokens computed per turn"
        totals = [sum(s["per_turn"]) for s in e["reference"]]
        assert totals[0] > totals[1] >= totals[2] > 0  # caching saves work, as the chapter says
    assert problem_experiment(load_problem("141")) is None
    assert problem_experiment(load_problem("143").path) == e143


def test_yours_only_when_the_experiment_test_passed():
    problem = load_problem("143")
    ref_tests = {"hidden": {NAME: {"observations": obs([[9, 9], [8, 7], [8, 2]])}}}
    rec = TestRecord(NAME.split("/", 1)[1], observations=obs([[9, 9], [8, 7], [8, 2]]))
    runs = {"hidden": SimpleNamespace(log=SimpleNamespace(tests={rec.name: rec}))}
    passed = [TestResult(NAME, "hidden", Verdict.AC)]
    mine = report_experiment(problem, ref_tests, passed, runs)
    assert mine["reference"] == mine["yours"] and mine["reference"][2]["per_turn"] == [8, 2]
    rec.observations = obs([[1, 1], [1, 1], [1, 1]])  # what a failing run may have said
    for verdict in (Verdict.WA, Verdict.TLE, Verdict.NR):
        failed = report_experiment(problem, ref_tests, [TestResult(NAME, "hidden", verdict)],
                                   runs)
        assert failed["yours"] is None and failed["reference"][0]["per_turn"] == [9, 9]
    # no hidden suite graded: the committed series, and nothing of the submission's
    public_only = report_experiment(problem, {"public": {}}, passed, runs)
    assert public_only == problem_experiment(problem)
