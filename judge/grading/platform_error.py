"""The report of a grading that never took place through the platform's fault (a worker killed
too often, a problem missing or different on the worker, a grader that failed): an IE with the
platform's message, and the provenance of the host that says so."""

from __future__ import annotations

from judge.grading import environment as env
from judge.judging.report import Report
from judge.judging.verdict import Verdict


def platform_error_report(problem, message: str) -> Report:
    """An IE report for when no grading took place, through the platform's fault (a worker
    killed too often, a problem missing or different on the worker, a grader that failed):
    `message` is shown as the first failure. `problem` is a Problem, or its id when there is
    none."""
    if isinstance(problem, str):
        about = {"id": problem, "slug": None, "version": None}
    else:
        try:
            version = problem.version
        except Exception:  # the problem's files are what failed
            version = None
        about = {"id": problem.id, "slug": problem.slug, "version": version}
    return Report(verdict=Verdict.IE, score=0.0, problem=about, submission={},
                  provenance={"device": None, "python": env.python_version(),
                              "torch": env.torch_version(), "judge_version": env.JUDGE_VERSION},
                  platform_error=message)
