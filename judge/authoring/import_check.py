"""`judge import` proves what it imports (`--no-check` skips it): an imported problem that cannot
work here is said at import time, with the reason, and the import's exit status is non-zero.

Two kinds of finding:
- a warning (`support_warnings`): something this judge or this machine cannot give the problem,
  found by reading its files (a module its tests import that the grading environment lacks,
  a CUDA test on a machine without CUDA, a problem the page cannot run);
- a failure: `check_problem` (judge/authoring/check.py) does not prove it, i.e. the handbook's
  solution is not AC, its tests' outcomes differ across its runs ("flaky": it passes by
  chance), or its starter is AC.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from dataclasses import dataclass, field

from judge.authoring.handbook_format import INSTALLED_BY
from judge.judging import python_ast
from judge.problem import Problem

# Python modules the browser's Python (Pyodide, in the page) does not have: tests or files that
# import one are run on the server when the student presses Run.
SERVER_ONLY_MODULES = frozenset({"numpy", "torch", "triton", "scipy", "safetensors",
                                 "transformers", "tokenizers", "pandas"})


@dataclass
class ImportCheck:
    number: int
    warnings: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    verdicts: dict[str, str] = field(default_factory=dict)   # submission label -> verdict
    # the solution's tests whose outcome differed across its runs: {test: outcome of each run}
    flaky: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failures


def imported_modules(source: str) -> set[str]:
    """Top-level module names a file imports (anywhere in it)."""
    try:
        tree = python_ast.parse(source)
    except SyntaxError:
        return set()
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out |= {a.name.split(".")[0] for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out.add(n.module.split(".")[0])
    return out


def test_modules(files: dict[str, str]) -> set[str]:
    mods = set()
    for text in files.values():
        mods |= imported_modules(text)
    return mods


def needs_server(files: dict[str, str]) -> list[str]:
    """The modules among those the files import that the page cannot load, sorted."""
    return sorted(test_modules(files) & SERVER_ONLY_MODULES)


def _available(name: str) -> bool:
    if name in sys.stdlib_module_names or name in sys.builtin_module_names:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def support_warnings(p: Problem) -> list[str]:
    """What this machine's grading environment cannot give the problem, each with its reason."""
    from judge.grading.environment import cuda_available

    files = {str(f): f.read_text(encoding="utf-8", errors="replace")
             for suite in ("public", "hidden") for f in sorted(p.suite_dir(suite).glob("*.py"))
             if p.suite_dir(suite).is_dir()}
    own = {p.module} | {f.stem for suite in ("public", "hidden") if p.suite_dir(suite).is_dir()
                        for f in p.suite_dir(suite).glob("*.py")}
    own |= set(p.config.handbook.modules)
    # `import triton` is met by tritonkit's install(), run before the tests (runner/install_step)
    own |= {req for req, module in INSTALLED_BY.items() if module in p.config.handbook.install}
    out = []
    for name in sorted(test_modules(files) - own):
        if name in ("checker", "judge_runner", "pytest"):
            continue
        if not _available(name):
            out.append(f"its tests import `{name}`, which the grading environment does not "
                       "have: the tests that need it fail")
    if p.language == "cuda":  # C++ for the GPU: nvcc there, the CPU emulator elsewhere
        from judge.grading.cpp import cuda

        if cuda.gpu_toolchain() is None and cuda.emulable(p):
            out.append("no GPU here: its CUDA C++ is proved on the CPU emulator (correctness "
                       "only; a GPU worker builds it with nvcc)")
    elif "cuda" in p.config.requires and not cuda_available():
        out.append("it requires CUDA and this machine has none: its CUDA tests are skipped "
                   "here, so only a CUDA grader proves them")
    return out


def _needs_a_gpu_here(p: Problem) -> bool:
    """A CUDA C++ problem is proved here with nvcc on a GPU, or on the CPU emulator when its
    files are within the emulator's reach (judge/grading/cpp/cuda.py)."""
    from judge.grading.cpp import cuda, toolchain

    if cuda.gpu_toolchain() is not None:
        return False
    return not cuda.emulable(p) or toolchain.find().pick("none") is None


def check_imported(p: Problem, *, device: str = "auto", reference_runs: int | None = None
                   ) -> ImportCheck:
    """`reference_runs`: how many times the solution is run (check.REFERENCE_RUNS)."""
    from judge.authoring.check import REFERENCE_RUNS, check_problem

    res = ImportCheck(int(p.id), warnings=support_warnings(p))
    if p.language == "cuda" and _needs_a_gpu_here(p):  # no verdict here, and none false
        from judge.grading.cpp.grade import NEEDS_GPU
        res.failures.append(f"not proved here: {NEEDS_GPU}")
        return res
    checked = check_problem(p, device=device, reference_runs=reference_runs or REFERENCE_RUNS)
    res.flaky = checked.flaky
    res.failures += checked.errors
    res.warnings += checked.warnings
    for s in checked.submissions:
        res.verdicts[s.label] = s.verdict or "-"
        res.failures += [f"{s.label}: {why}" for why in s.problems]
    if not checked.submissions and not checked.errors:
        res.failures.append("not checked")
    return res
