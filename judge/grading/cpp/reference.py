"""The reference binary's run of a C++ problem: what every submission's records are compared
with. Built with the reference solution and the prepared test (build.py), run once in the
sandbox (execute.py), and kept per problem version, compiler and sanitizer mode.

The reference must pass its own test there: every case ends `done`, its process exits 0,
every expectation held (in the reference's build `require_eq` compares for real), no
sanitizer report. Anything else is the problem's fault, never a student's: ReferenceFailure.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict
from pathlib import Path

from judge.config import settings
from judge.grading.cpp import build as builder
from judge.grading.cpp.execute import execute
from judge.grading.cpp.records import Observation
from judge.grading.cpp.toolchain import Compiler
from judge.grading.cpp.verdicts import RefCase
from judge.grading.reference_cache import ReferenceFailure as _Failure

FORMAT = 1
_lock = threading.Lock()


class ReferenceFailure(_Failure):
    """The reference does not pass its own test here; the message says how (one of the
    reference cache's failures, so `judge check` and the page say it as they say theirs)."""


def sanitize_of(problem) -> str:
    return problem.config.native.sanitize


def _path(problem, cc: Compiler) -> Path:
    return settings().cache_dir / "cpp-reference" / \
        f"{problem.version[:32]}-{cc.ident}-{sanitize_of(problem).replace(',', '+')}.json"


def reference_cases(problem, cc: Compiler) -> tuple[list[RefCase], bool]:
    """(the reference's cases, whether they came from the cache)."""
    path = _path(problem, cc)
    with _lock:
        if path.is_file():
            return _decode(json.loads(path.read_text(encoding="utf-8"))), True
        cases = _compute(problem, cc)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.parent.chmod(0o700)  # the reference's values are the hidden answers
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"format": FORMAT, "cases": [asdict(c) for c in cases]}),
                       encoding="utf-8")
        tmp.replace(path)
        return cases, False


def _decode(data: dict) -> list[RefCase]:
    return [RefCase(c["name"], [Observation(**o) for o in c["observations"]], c["cpu_s"])
            for c in data["cases"]]


def _compute(problem, cc: Compiler) -> list[RefCase]:
    source = problem.reference_path.read_text(encoding="utf-8")
    test = problem.native_test_path.read_text(encoding="utf-8")
    b = builder.build(problem, source, "reference", cc, sanitize_of(problem), test,
                      problem.config.native.std)
    if b.compile_error is not None:
        raise ReferenceFailure(f"the reference does not compile with the test: "
                               f"{b.compile_error['message']}")
    if b.binary is None:
        raise ReferenceFailure("the reference's build made no program")
    n = len(problem.tests())
    ex = execute(problem, b.binary, sanitize_of(problem),
                 [problem.limits.cpu_s] * max(n, 64))
    bad = [f"{c.name}: {_why(c)}" for c in ex.stream.cases if _why(c)]
    if ex.stream.stray:
        bad.append(f"{ex.stream.stray} record(s) out of order")
    if not ex.stream.cases:
        bad.append("it ran no case (no pj::run)" + _tail(ex.stderr))
    if ex.result.returncode not in (0, None) and not bad:
        bad.append(f"the test program exited with {ex.result.returncode}{_tail(ex.stderr)}")
    if bad:
        raise ReferenceFailure("the reference fails its own test: " + "; ".join(bad[:5]))
    return [RefCase(c.name, list(c.observations), c.cpu_s or 0.0) for c in ex.stream.cases]


def _why(c) -> str | None:
    if c.tampered:
        return "its records are out of order"
    if c.how is None:
        return "the program ended during it"
    if c.end != "done" or c.how != "exit 0":
        return f"{c.end or 'no end'} {c.why!r} ({c.how})".strip()
    return None


def _tail(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("==PJ-CASE")]
    return f" ({lines[-1][:300]})" if lines else ""


def reference_entries(problem, suites: list[str]) -> tuple[dict, bool]:
    """The reference cache's shape ({suite: {"tests": [entry]}}, cached), for what reads a
    problem's reference without grading (judge check, the page's public expectations): each
    case an entry whose observations are its checks, labelled by what they check."""
    from judge.grading.cpp import toolchain

    if problem.language == "cuda":  # nvcc on a GPU, else the emulator (cuda_build.py)
        from judge.grading.cpp import cuda, cuda_build
        cc = toolchain.find().pick("none")
        if cc is None:
            raise ReferenceFailure("no C++ compiler here builds the CPU emulator (judge doctor)")
        cases, cached = cuda_build.reference_cases(problem, cc, cuda.gpu_toolchain())
    else:
        cc = toolchain.find().pick(sanitize_of(problem))
        if cc is None:
            raise ReferenceFailure(f"no C++ compiler here builds with -fsanitize="
                                   f"{sanitize_of(problem)} (judge doctor)")
        cases, cached = reference_cases(problem, cc)
    out: dict[str, dict[str, list]] = {s: {"tests": []} for s in suites}
    for c in cases:
        suite = problem.native_suite_of(c.name)
        if suite in out:
            out[suite]["tests"].append({
                "name": f"{suite}/{problem.native_test_path.name}::{c.name}",
                "outcome": "passed", "time_s": c.cpu_s,
                "observations": [{"label": o.what, "value": o.value} for o in c.observations]})
    return out, cached
