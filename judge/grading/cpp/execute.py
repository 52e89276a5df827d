"""One run of a built C++ test binary, in the sandbox, with the same layers and the same
limits as a Python run of the problem (its `[limits]`: CPU and wall seconds, memory in the
run's cgroup, output), on a copy of the binary in a sealed folder of the grading's own.

The sanitizers need two things a plain run does not: AddressSanitizer reserves terabytes of
address space for its shadow memory, so the memory limit is the cgroup's (which counts what
is used), never RLIMIT_AS (run_sandboxed sets RLIMIT_AS only where no cgroup works: there
AddressSanitizer cannot start, and the toolchain says so); and LeakSanitizer stops its own
threads with ptrace to scan their stacks, so an ASan run's seccomp filter lets ptrace through
(seccomp.ALLOWABLE: the run can trace only its own processes). Their options are set by the
environment, read when the sanitizer starts, before any of the student's code runs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from judge.grading.cpp.records import Reader, Stream
from judge.sandbox import Limits, grants, run_sandboxed
from judge.sandbox.result import SandboxResult
from judge.sandbox.run import child_pipe

SANITIZER_EXIT = 86
COMMON = f"symbolize=0:exitcode={SANITIZER_EXIT}:halt_on_error=1:disable_coredump=1"
OPTIONS = {
    "ASAN_OPTIONS": f"{COMMON}:detect_leaks=1:leak_check_at_exit=0:abort_on_error=0:"
                    "detect_stack_use_after_return=0:allocator_may_return_null=0",
    "UBSAN_OPTIONS": f"{COMMON}:print_stacktrace=1",
    "LSAN_OPTIONS": f"{COMMON}",
}
# libstdc++'s exceptions share their message strings by an atomic count TSan does not see
# (libstdc++.so is not instrumented): an exception handed between threads (std::future)
# reads as a race on those strings. Only those functions are suppressed. A suppression
# matches a frame's function name, so TSan symbolizes (TSAN_SYMBOLIZE): what it can name is
# libstdc++.so's exported functions (the student's binary is stripped, its frames stay
# offsets, named outside by sanitizer.py). With symbolize=0 no rule ever matched: a correct
# thread pool (the handbook's cpp-thread-pool) failed its own test by chance.
TSAN_SUPPRESSIONS = """\
race:std::runtime_error::~runtime_error
race:std::logic_error::~logic_error
race:std::__cow_string::~__cow_string
race:std::__exception_ptr::exception_ptr::_M_release
race:std::__exception_ptr::exception_ptr::_M_addref
"""
TSAN_SYMBOLIZE = "symbolize=1"


@dataclass
class Execution:
    stream: Stream
    result: SandboxResult
    stderr: str
    binary_inside: str     # the binary's path as its reports name it


def limits_for(problem) -> Limits:
    lim = problem.limits
    return Limits(wall_s=lim.wall_s, cpu_s=lim.cpu_s, memory_mb=lim.memory_mb, processes=64,
                  output_bytes=lim.output_kb * 1024, scratch_mb=64, scratch_files=1000,
                  tmp_mb=64)


@contextlib.contextmanager
def run_folder(problem, binary: Path, tag: str):
    """A run's own folder: (root, bin/ holding a copy of `binary` as bin/test, scratch/).
    The caller seals root once bin/ holds all it needs; it is forgotten and removed after."""
    root = Path(tempfile.mkdtemp(prefix=f"judge-{problem.id}-p{os.getpid()}-{tag}-"))
    try:
        bin_dir, scratch = root / "bin", root / "scratch"
        bin_dir.mkdir()
        scratch.mkdir()
        exe = bin_dir / "test"
        shutil.copyfile(binary, exe)
        exe.chmod(0o755)
        yield root, bin_dir, scratch, exe
    finally:
        grants.forget(str(root))
        shutil.rmtree(root, ignore_errors=True)


def execute(problem, binary: Path, sanitize: str, case_cpu: list[float]) -> Execution:
    with run_folder(problem, binary, "run") as (root, bin_dir, scratch, exe):
        env = _environment(sanitize, case_cpu, bin_dir)
        grants.seal(str(root))
        r, w = child_pipe()
        reader = Reader()
        env["PJ_RESULTS_FD"] = str(w)
        try:
            res = run_sandboxed([str(exe)], ro_binds=[str(bin_dir)], scratch=str(scratch),
                                env=env, limits=limits_for(problem), pass_fds=(w,),
                                readers={r: reader.feed},
                                allow_syscalls=("ptrace",) if sanitize.startswith("address")
                                else ())
        finally:
            os.close(r)
        return Execution(reader.stream, res, res.stderr.decode("utf-8", "replace"), str(exe))


def _environment(sanitize: str, case_cpu: list[float], folder: Path) -> dict[str, str]:
    env = {"PJ_CASE_CPU": ",".join(f"{c:.3f}" for c in case_cpu), **OPTIONS}
    if sanitize == "thread":
        supp = folder / "tsan.supp"
        supp.write_text(TSAN_SUPPRESSIONS, encoding="utf-8")
        supp.chmod(0o644)
        env["TSAN_OPTIONS"] = (f"{COMMON}:{TSAN_SYMBOLIZE}:suppressions={supp}:"
                               "report_signal_unsafe=0")
    return env
