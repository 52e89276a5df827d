"""Building, running and grading a CUDA C++ problem (cuda.py says the design): the C++ path's
build, cache and verdicts, with nvcc on a GPU worker or the emulator elsewhere.

Every step that reads or runs the student's text is sandboxed as a C++ build's is: the
compiler (nvcc, or g++ with the emulator's headers) runs in build.py's compile sandbox, with
the GPU's device nodes and CUDA's folder when it is nvcc (`-arch=native` asks the device);
the test binary runs with the problem's limits, one process, its records on a pipe.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

from judge.config import settings
from judge.grading.cpp import build as builder
from judge.grading.cpp import cuda, prepare, screen
from judge.grading.cpp.execute import limits_for, run_folder
from judge.grading.cpp.records import MAX_BYTES, Stream
from judge.grading.cpp.reference import ReferenceFailure, _why
from judge.grading.cpp.toolchain import Compiler
from judge.grading.cpp.verdicts import RefCase
from judge.sandbox import grants, run_sandboxed
from judge.sandbox.result import SandboxResult
from judge.sandbox.run import child_pipe

USER = "user.cu"
FORMAT = 1
_lock = threading.Lock()


def flags(nvcc: str | None) -> list[str]:
    """What a build's cache key records of how it was built."""
    return [f"nvcc={nvcc}", *cuda.NVCC_FLAGS] if nvcc else list(cuda.EMU_FLAGS)


class CudaLayout(builder._Layout):
    """build.py's folder, for a .cu test: the CUDA harness (and the emulator's headers), the
    student's file as user.cu, rewritten for the emulator where there is no nvcc."""
    user_name = USER

    def __init__(self, root: Path, key: str, nvcc: str | None):
        super().__init__(root, key)
        self.nvcc = nvcc
        self.user = self.user_dir / USER
        self.main = self.test_dir / f"{key}.{'cu' if nvcc else 'cpp'}"

    @property
    def user_suffix(self) -> str:
        return f"/u/{USER}"

    def write(self, source: str, test_source: str) -> prepare.Prepared:
        for name in ("pj_cuda.cuh", "pj_cublas.cuh"):
            shutil.copy2(cuda.HARNESS_DIR / name, self.inc / name)
        (self.inc / "emu").mkdir()
        shutil.copy2(cuda.EMU_DIR / "cuda_runtime.h", self.inc / "emu" / "cuda_runtime.h")
        emu = self.nvcc is None
        self.user.write_text(cuda.translate(source) if emu else source, encoding="utf-8",
                             errors="surrogateescape")
        prepared = prepare.prepare(test_source, self.key, USER, cuda=True)
        text = prepared.text + prepare.tail(prepared, self.key)
        self.main.write_text(cuda.translate(text) if emu else text, encoding="utf-8")
        self.user_header(prepared, [], "submission")
        for p in (self.inc, self.inc / "emu", self.user_dir, self.test_dir):
            os.chmod(p, 0o755)
            for f in p.iterdir():
                if f.is_file():
                    os.chmod(f, 0o644)
        return prepared

    def user_header(self, prepared, undefs: list[str], role: str) -> None:
        self.header.write_text(prepare.user_header(prepared, self.key, str(self.user), undefs,
                                                   role, harness="pj_cuda.cuh"), encoding="utf-8")
        os.chmod(self.header, 0o644)

    def _roots(self) -> tuple[str, ...]:
        return ("/usr", cuda.cuda_root(self.nvcc)) if self.nvcc else ("/usr", str(self.inc / "emu"))

    def _run(self, argv: list[str]):
        binds = [str(self.inc), str(self.user_dir), str(self.test_dir), *self._roots()]
        return run_sandboxed(argv, ro_binds=list(dict.fromkeys(binds)), scratch=str(self.scratch),
                             limits=builder.COMPILE_LIMITS, env={"LC_ALL": "C", "HOME": str(self.scratch)},
                             device="cuda" if self.nvcc else "cpu")

    def _role(self, flags_: list[str]) -> list[str]:
        return [f for f in flags_ if f.startswith("-DPJ_ROLE_")]

    def _pre(self, cc: Compiler, flags_: list[str]) -> list[str]:
        # the screen reads g++'s preprocessing of the same text (nvcc's host pass is g++'s)
        inc = ["-I", str(Path(self._roots()[1]) / "include")] if self.nvcc else \
            ["-I", str(self.inc / "emu"), "-DPJ_EMU"]
        # `-x c++`: g++ takes a .cu file for a linker input, and preprocesses nothing
        return [cc.path, "-x", "c++", "-std=c++17", *self._role(flags_), *inc, "-iquote",
                str(self.inc), str(self.main)]

    def _screen(self, text: str) -> screen.Screened:
        found = screen.preprocessed(text, str(self.user), self._roots(),
                                    str(self.inc / "pj_cuda.cuh"), extra=cuda.forbidden)
        if found.refusal is None and f'"{self.user}"' not in text:
            # never compiled unscreened: a pass that did not read the file screened nothing
            found.refusal = (None, "the judge could not read your file before compiling it")
        return found

    def compile(self, cc: Compiler, flags_) -> tuple[str | None, float]:
        out, cpu = super().compile(cc, flags_)
        # nvcc's own front end says `file(12): error: ...`; the C++ path reads `file:12:1: error:`
        return (None if out is None else cuda.gcc_style(out)), cpu

    def _cc(self, cc: Compiler, flags_: list[str]) -> list[str]:
        if self.nvcc:
            return [self.nvcc, *cuda.NVCC_FLAGS, *self._role(flags_), "-I", str(self.inc),
                    str(self.main)]
        return [cc.path, *cuda.EMU_FLAGS, *self._role(flags_), "-I", str(self.inc / "emu"),
                "-iquote", str(self.inc), str(self.main)]


class _Channel:
    """The records' bytes as they come, bounded (records.MAX_BYTES)."""

    def __init__(self):
        self.data, self.truncated = bytearray(), False

    def feed(self, chunk: bytes) -> bool:
        if len(self.data) + len(chunk) > MAX_BYTES:
            self.truncated = True
            return True
        self.data += chunk
        return False


def execute(problem, binary: Path, gpu: bool) -> tuple[Stream, SandboxResult, str]:
    """One run of a built test binary in the sandbox: (its records, the run, its stderr)."""
    with run_folder(problem, binary, "cu") as (root, bin_dir, scratch, exe):
        grants.seal(str(root))
        r, w = child_pipe()
        channel = _Channel()
        try:
            # a GPU run reads the driver's libraries (libcuda) from the host's /usr
            res = run_sandboxed([str(exe)], ro_binds=[str(bin_dir)] + (["/usr"] if gpu else []),
                                scratch=str(scratch), env={"PJ_RESULTS_FD": str(w)},
                                limits=limits_for(problem), pass_fds=(w,),
                                readers={r: channel.feed}, device="cuda" if gpu else "cpu")
        finally:
            os.close(r)
        signalled = -res.returncode if res.returncode is not None and res.returncode < 0 else None
        stream = cuda.read_stream(bytes(channel.data), res.returncode, signalled)
        stream.truncated = channel.truncated
        return stream, res, res.stderr.decode("utf-8", "replace")


def reference_cases(problem, cc: Compiler, nvcc: str | None) -> tuple[list[RefCase], bool]:
    """The reference's cases, run once per problem version and build (cached like a C++
    problem's, reference.py); (cases, whether they came from the cache)."""
    mode = "nvcc" if nvcc else "emu"
    path = settings().cache_dir / "cpp-reference" / \
        f"{problem.version[:32]}-{cc.ident}-cuda-{mode}.json"
    with _lock:
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            return [RefCase(c["name"], [cuda.Observation(**o) for o in c["observations"]],
                            c["cpu_s"]) for c in data["cases"]], True
        cases = _compute(problem, cc, nvcc)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.parent.chmod(0o700)  # the expected values
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"format": FORMAT, "cases": [
            {"name": c.name, "cpu_s": c.cpu_s,
             "observations": [o.__dict__ for o in c.observations]} for c in cases]}),
            encoding="utf-8")
        tmp.replace(path)
        return cases, False


def _compute(problem, cc: Compiler, nvcc: str | None) -> list[RefCase]:
    source = problem.reference_path.read_text(encoding="utf-8")
    test = problem.native_test_path.read_text(encoding="utf-8")
    b = builder.build(problem, source, "reference", cc, "none", test, "c++17", nvcc)
    if b.compile_error is not None:
        raise ReferenceFailure(f"the reference does not compile with the test: "
                               f"{b.compile_error['message']}")
    if b.binary is None:
        raise ReferenceFailure("the reference's build made no program")
    stream, res, stderr = execute(problem, b.binary, nvcc is not None)
    bad = [f"{c.name}: {_why(c)}" for c in stream.cases if _why(c)]
    if stream.stray:
        bad.append(f"{stream.stray} record(s) out of order")
    if not stream.cases:
        tail = [ln for ln in stderr.splitlines() if ln.strip()][-1:]
        bad.append("it ran no case" + (f" ({tail[0][:300]})" if tail else "") +
                   f" (exit {res.returncode})")
    if bad:
        raise ReferenceFailure("the reference fails its own test: " + "; ".join(bad[:5]))
    return [RefCase(c.name, list(c.observations), c.cpu_s or 0.0) for c in stream.cases]
