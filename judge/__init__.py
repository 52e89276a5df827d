"""The grading core: problems as folders, sandboxed runs, comparison with the reference,
verdicts and reports. No HTTP and no terminal code here (those live in web/, cli.py,
console.py and practice/judge.py).

    from judge import load_problem, list_problems, grade
    report = grade(load_problem("143"), source, suite="all", device="auto", on_event=print)
"""

from __future__ import annotations

__all__ = ["load_problem", "list_problems", "ProblemBank", "grade", "check_problem", "Problem", "ProblemError",
           "Report", "TestResult", "Verdict", "public_expectations", "JUDGE_VERSION"]

JUDGE_VERSION = "0.1.0"

_LAZY = {
    "load_problem": "problem", "list_problems": "problem", "Problem": "problem",
    "ProblemError": "problem", "ProblemBank": "problem", "grade": "grading", "check_problem": "check",
    "public_expectations": "reference_cache", "Report": "report", "TestResult": "report", "Verdict": "verdict",
}


def __getattr__(name):  # imported lazily, so `import judge.sandbox` stays cheap
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(name)
