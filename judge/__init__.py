"""The grading core: problems as folders, sandboxed runs, comparison with the reference,
verdicts and reports. No HTTP here; terminal code only in judge/cli/.

Rooms, and which way imports go (a room imports only the rooms listed after it):

    cli/        the `judge` verbs and their terminal output           -> authoring, grading, problem, judging
    handout/    the student's package: built from the bank (no reference, no hidden test), and
                read and run from where it was unpacked                -> grading, problem, browser, judging
    authoring/  check, scaffold, import of the handbook's problems, mutation, CPU/GPU parity
                                                                      -> grading, problem, judging
    grading/    host-side grading: grade(), suite runs in the sandbox, the grading folder,
                the reference cache, warm graders, the chapter's experiment
                                                                      -> sandbox, problem, judging
    browser/    the page's Run (Pyodide): the same judging as Submit   -> judging, runner
    judging/    the browser-safe kernel: the child's event log, one test's verdict, comparison,
                verdicts, reports, scores (stdlib and pytest only)    -> runner (errors only)
    problem/    the problem model: problem.toml, the folder, the bank  -> judging (vocabulary), config
    sandbox/    running untrusted code: namespaces, seccomp, cgroups, limits
    runner/     the pytest plugin that runs inside the sandbox (copied there as judge_runner)
    messages/   the words users read, per language
    config.py   the one settings object

    from judge import load_problem, list_problems, grade
    report = grade(load_problem("143"), source, suite="all", device="auto", on_event=print)
"""

from __future__ import annotations

__all__ = ["load_problem", "list_problems", "ProblemBank", "grade", "check_problem", "Problem", "ProblemError",
           "Report", "TestResult", "Verdict", "public_expectations", "JUDGE_VERSION"]

JUDGE_VERSION = "0.1.0"

_LAZY = {
    "load_problem": "problem", "list_problems": "problem", "Problem": "problem",
    "ProblemError": "problem", "ProblemBank": "problem", "grade": "grading.grader",
    "check_problem": "authoring.check", "public_expectations": "grading.reference_cache",
    "Report": "judging.report", "TestResult": "judging.report", "Verdict": "judging.verdict",
}


def __getattr__(name):  # imported lazily, so `import judge.sandbox` stays cheap
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(name)
