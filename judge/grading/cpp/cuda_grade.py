"""`grade()` of a CUDA C++ problem: on a worker with nvcc and a CUDA device, built with nvcc
and run on the GPU; elsewhere, built for the emulator and run on the CPU (correctness only),
unless the problem or the file uses what the emulator does not model: then it needs a GPU
worker, and this one gives no verdict (a platform report, IE with no test).
"""

from __future__ import annotations

import time

from judge.grading.cpp import cuda, cuda_build, toolchain
from judge.grading.cpp.grade import _Grading
from judge.grading.cpp.verdicts import judge_run
from judge.grading.platform_error import platform_error_report
from judge.judging.report import Report
from judge.judging.vocabulary import FailureKind

NEEDS_GPU = ("this is a CUDA C++ problem for a GPU worker (nvcc and a CUDA device): it uses "
             "{what}, which the CPU emulator does not model; this worker has no GPU with nvcc, "
             "so it gives no verdict")
NO_COMPILER = "no C++ compiler here builds CUDA C++ problems for the CPU emulator (judge doctor)"
DEADLOCK = ("deadlock: some threads of a block wait at __syncthreads() (or a warp's barrier) "
            "that the others never reach (the CPU emulator)")


def grade_cuda(problem, source: str, *, suite: str, select, reveal_hidden: bool,
               emit) -> Report:
    nvcc = cuda.gpu_toolchain()
    if nvcc is None:
        gaps = [g for p in (problem.native_test_path, problem.reference_path)
                for g in cuda.emulator_gaps(p.read_text(encoding="utf-8"))] + \
            cuda.emulator_gaps(source)
        if gaps:
            return platform_error_report(problem, NEEDS_GPU.format(what=", ".join(
                dict.fromkeys(gaps))))
    cc = toolchain.find().pick("none")
    if cc is None:
        return platform_error_report(problem, NO_COMPILER)
    g = CudaGrading(problem, source, suite, select, reveal_hidden, emit, cc, "none")
    g.nvcc = nvcc
    g.provenance.update(device="cuda" if nvcc else "cpu", compiler=nvcc or cc.version,
                        sanitize="none", cuda_build="nvcc" if nvcc else "emulator")
    return g.guarded()


class CudaGrading(_Grading):
    nvcc: str | None = None

    def _reference(self):
        return cuda_build.reference_cases(self.problem, self.cc, self.nvcc)

    def _build(self):
        from judge.grading.cpp import build as builder
        return builder.build(self.problem, self.source, "submission", self.cc, "none",
                             self.problem.native_test_path.read_text(encoding="utf-8"),
                             "c++17", self.nvcc)

    def _judge(self, ref, plan, b) -> Report:
        t = time.perf_counter()
        stream, res, stderr = cuda_build.execute(self.problem, b.binary, self.nvcc is not None)
        self.timings["run_s"] = round(time.perf_counter() - t, 4)
        self.timings["run_cpu_s"] = round(res.cpu_s or 0.0, 4)
        self.provenance["sandbox_layers"] = res.layers or {}
        self.provenance["missing_layers"] = res.missing_layers or []
        limits = [self.problem.limits.cpu_s] * len(ref)
        verdicts = judge_run(ref, stream, res, limits, lambda i: None)
        if res.returncode == cuda.DEADLOCK_EXIT and "==PJ-EMU deadlock" in stderr:
            for v in verdicts:
                if v.failure is not None and v.failure.kind == FailureKind.CRASH:
                    v.failure.message = DEADLOCK
                    break
        return self._finished(verdicts, plan)
