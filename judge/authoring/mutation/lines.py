"""Which lines of the reference the problem's suites execute on this device, and which lines
sit in a CUDA-only branch.

A mutant on a line that never runs survives by construction, so the gate reports it without
grading it. To know those lines, the reference runs every suite once more in the sandbox, the
same runner under a line tracer (`sys.settrace`, standard library only) that records the
lines of the reference file and nothing else, and writes them to its scratch folder.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from concurrent.futures import ThreadPoolExecutor

from judge.grading.child_env import child_env
from judge.grading.suite_run import RESULTS
from judge.grading.workdir import View
from judge.judging import python_ast
from judge.judging.child_log import read_capped
from judge.judging.clock import TimeLimits, suite_wall_net
from judge.problem import Problem
from judge.sandbox import Limits, run_sandboxed

LINES = "lines.json"
_CUDA = re.compile(r"\bcuda\b|\.cuda\(", re.IGNORECASE)
_CUDA_TEST = re.compile(r"cuda|is_pinned|pin_memory", re.IGNORECASE)
SLOWDOWN = 4  # a traced run is slower: its CPU budget is this many times the problem's

# Runs inside the sandbox as `python -c BOOT <reference file> <lines file> <runner args>`. The
# global tracer answers every call (cheaply: one dict look-up per code file) and traces only
# frames of the reference file; threads the tests start are traced too.
_BOOT = r"""
import json, os, sys, threading
target, out = os.path.realpath(sys.argv[1]), sys.argv[2]
seen, known = set(), {}
def _local(frame, event, arg):
    if event == "line":
        seen.add(frame.f_lineno)
    return _local
def _global(frame, event, arg):
    name = frame.f_code.co_filename
    hit = known.get(name)
    if hit is None:
        hit = known[name] = os.path.realpath(name) == target
    return _local if hit else None
sys.settrace(_global)
threading.settrace(_global)
from judge_runner.__main__ import main
status = 70
try:
    status = main(sys.argv[3:])
finally:
    sys.settrace(None)
    with open(out, "w") as f:
        json.dump(sorted(seen), f)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(status)
"""


class CoverageError(RuntimeError):
    """The traced run of the reference did not complete."""


def executed_lines(problem: Problem, device: str) -> set[int]:
    """Lines of the reference file that some test of some suite executes on `device`."""
    with View(problem) as view:
        sub = view.submission("reference", problem.reference_path.read_text(encoding="utf-8"))
        suites = [s for s in ("public", "hidden") if s in view.tests and problem.tests(s)]
        with ThreadPoolExecutor(max(1, len(suites))) as pool:
            found = list(pool.map(lambda s: _traced(problem, view, sub, s, device), suites))
    return set().union(*found)


def _traced(problem: Problem, view: View, sub, suite: str, device: str) -> set[int]:
    lim = problem.limits
    conf, scratch = view.run_dirs(f"lines-{suite}", {})
    suite_dir = view.tests[suite]
    budget = TimeLimits.unlimited(lim).default_s * SLOWDOWN
    argv = [sys.executable, "-P", "-s", "-c", _BOOT, str(sub), LINES,
            "--results", RESULTS, "--module", problem.module, "--submission", str(sub),
            "--suite-dir", str(suite_dir), "--limits", str(conf / "limits.json"),
            "--default-limit", f"{budget:.3f}", "--import-limit", f"{budget:.3f}",
            *[f.name for f in problem.test_files(suite)]]
    binds = [(str(p), str(p)) for p in (view.handbook, view.runner_parent, sub.parent,
                                        suite_dir, conf)]
    box = Limits(wall_s=suite_wall_net(lim) * SLOWDOWN, cpu_s=lim.cpu_s * SLOWDOWN,
                 memory_mb=lim.memory_mb, processes=64, file_size_mb=64, open_files=256,
                 output_bytes=lim.output_kb * 1024)
    res = run_sandboxed(argv=argv, ro_binds=binds, scratch=str(scratch),
                        env=child_env(problem, view, sub.parent, device), limits=box,
                        device=device)
    data = read_capped(scratch / LINES)
    try:
        lines = json.loads(data) if data else None
    except ValueError:
        lines = None
    if res.returncode != 0 or not isinstance(lines, list):
        tail = (bytes(res.stdout or b"") + bytes(res.stderr or b"")).decode("utf-8", "replace")
        raise CoverageError(f"the traced run of the {suite} suite ended with status "
                            f"{res.returncode} (timed out: {bool(res.timed_out)})\n{tail[-1500:]}")
    return {n for n in lines if isinstance(n, int)}


def cuda_lines(source: str) -> set[int]:
    """Lines that only CUDA runs: the branch of an `if` whose test names CUDA or pinned memory
    (a CPU tensor is never pinned without CUDA) taken when it holds (`if t.is_cuda:`,
    `if k.is_pinned():`; the else branch of `if not ...` or `if device != "cuda":`), and simple
    statements that call into CUDA themselves (`torch.cuda.synchronize()`)."""
    out: set[int] = set()
    for node in ast.walk(python_ast.parse(source)):
        if isinstance(node, ast.stmt) and not hasattr(node, "body") and \
                not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) and \
                _CUDA.search(ast.unparse(node)):
            out.update(_span(node))
        if not isinstance(node, (ast.If, ast.IfExp)) or not _CUDA_TEST.search(
                ast.unparse(node.test)):
            continue
        test = node.test
        negated = (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)) or (
            isinstance(test, ast.Compare) and all(isinstance(o, (ast.NotEq, ast.IsNot))
                                                  for o in test.ops))
        branch = node.orelse if negated else node.body
        for part in branch if isinstance(branch, list) else [branch]:
            out.update(_span(part))
    return out


def _span(node: ast.expr | ast.stmt) -> range:
    # typeshed allows end_lineno None for nodes built by hand; ast.parse always sets it
    end = node.end_lineno if node.end_lineno is not None else node.lineno
    return range(node.lineno, end + 1)
