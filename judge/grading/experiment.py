"""The chapter's experiment as chart data: tokens computed per turn, for each run of the hidden
experiment test (143: no cache, GPU only, tiered; 144: no cache, write-back, write-through).

    series = [{"run": "no cache", "per_turn": [t1, t2, t3]}, ...]
    experiment = {"test": name, "label": "tokens computed per turn",
                  "reference": series, "yours": series | None}

Where the numbers come from, and why nothing secret leaks through them:

- The reference's series is the reference run's own observation of that hidden test. The
  problem's page shows it before anything is submitted, so it is committed with the problem
  (`<problem>/experiment.json`, written by `python -m judge.grading.experiment 143 144` from the reference
  cache): a page view then costs a file read, where the hidden reference run costs ~20 s of CPU
  and torch on the web host. A stale file is caught by a test that grades 143 and compares the
  file with the report's `reference`, which comes from the grading's own reference run. These
  numbers are counts of work the engine did; the problem's statement publishes the experiment,
  and they are shown as the reference's, not as any submission's.
- `yours` comes from the submission's hidden run, a channel the submission controls: it is given
  only when that hidden test PASSED, i.e. every observation of it, this one included, equalled
  the reference's (compare.py). So it can only ever repeat numbers the page already shows; a
  failing or tampered run gives None and says nothing about what the hidden test saw.
"""

from __future__ import annotations

import json
from pathlib import Path

from judge.judging.test_id import TestId
from judge.judging.verdict import Verdict

LABEL = "tokens computed per turn"
FILE_NAME = "experiment.json"


def series_of(observations) -> tuple[str, list[dict]] | None:
    """(label, series) from a test's observations [{label, value}], or None when it has none of
    the form "tokens computed per turn: run, run, ..." with one list of ints per run."""
    for obs in observations or ():
        label, value = obs.get("label"), obs.get("value")
        if not isinstance(label, str) or not label.startswith(LABEL + ":"):
            continue
        runs = [r.strip() for r in label.split(":", 1)[1].split(",")]
        if not isinstance(value, list) or len(value) != len(runs) or not all(
                isinstance(v, list) and all(isinstance(n, int) and not isinstance(n, bool)
                                            for n in v) for v in value):
            return None
        return label, [{"run": run, "per_turn": list(v)} for run, v in zip(runs, value)]
    return None


def problem_experiment(problem) -> dict | None:
    """The problem's experiment for its page ("yours": None), from its committed file; None for
    a problem without one (or with a malformed file). `problem`: a Problem or its folder."""
    try:
        folder = Path(getattr(problem, "path", problem))
        data = json.loads((folder / FILE_NAME).read_text(encoding="utf-8"))
        reference = data["reference"]
        if not all(isinstance(s["run"], str) and isinstance(s["per_turn"], list)
                   for s in reference):
            return None
        return {"test": str(data["test"]), "label": LABEL, "reference": reference,
                "yours": None}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def report_experiment(problem, ref_tests: dict, results, runs: dict) -> dict | None:
    """The report's `experiment`: the reference's series from this grading's reference run of
    the hidden suite (from the committed file when that suite was not graded), and the
    submission's own when its experiment test passed (see the module's docstring)."""
    for name, entry in (ref_tests.get("hidden") or {}).items():
        found = series_of(entry.get("observations"))
        if found is None:
            continue
        out = {"test": name, "label": LABEL, "reference": found[1], "yours": None}
        passed = any(r.name == name and r.verdict is Verdict.AC for r in results)
        run = runs.get("hidden")
        if passed and run is not None:
            rec = run.log.tests.get(TestId.parse(name).node)
            mine = series_of(rec.observations if rec is not None else None)
            out["yours"] = mine[1] if mine is not None else None
        return out
    return problem_experiment(problem)


def write_experiment(problem, device: str = "cpu") -> Path | None:
    """Writes `<problem>/experiment.json` from the reference's hidden run (computed, or read
    from the reference cache); None when the problem has no experiment."""
    from judge.grading.reference_cache import get_reference

    ref, _ = get_reference(problem, ["hidden"], device)
    for entry in ref["hidden"]["tests"]:
        found = series_of(entry.get("observations"))
        if found is not None:
            path = Path(problem.path) / FILE_NAME
            data = {"test": entry["name"], "label": LABEL, "observation": found[0],
                    "reference": found[1]}
            path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
            return path
    return None


if __name__ == "__main__":
    import sys

    from judge import load_problem

    for arg in sys.argv[1:]:
        print(arg, write_experiment(load_problem(arg)) or "no experiment")
