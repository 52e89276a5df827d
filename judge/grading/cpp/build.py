"""One binary of a C++ problem: the prepared test (prepare.py) with the reference solution or
with the student's file, compiled in the sandbox and cached.

The compiler runs the student's text, so it runs where a submission runs: `run_sandboxed`,
as a slot uid, seeing only the system's /usr and this build's sources, under CPU, memory,
process and file-size limits of its own (COMPILE_LIMITS). Two passes: the preprocessor
(`-E -dD`), whose output screen.py reads (the student's macros, what it includes, what it
names), then the compile and the strip. The binary that runs is stripped (no symbol table
names the test's functions); the unstripped one stays with the judge, to name the student's
line in a sanitizer report (sanitizer.py).

Cached per submission and problem version: the key hashes the role, the file, the problem's
version (its tests among it), the compiler, its flags and the harness; a compile error is
cached too. Each compile gets a fresh random key for the test's namespace, macro and folder
names, so nothing one build showed helps the next.

The harness's functions that are no template (harness/pj_judge_rt.cpp: run, the case's
process, the results channel), and its printing of the commonest values (pj_judge.hpp's
PJ_PRECOMPILED), are the same in every binary: they are compiled once per compiler, flags
and harness (`runtime_object`, cached beside the builds) and the object is linked into each
build, which so compiles only the test's and the student's code (about 45 % less CPU). A
student's file that defines one of them again does not link; one that redefines one `inline`
replaces it in its own binary, which gains it nothing its code could not do anyway: that code
runs in the same process and can write to the same channel, and a record's value still needs
the value (docs/IMPORTED_GRADING.md, "C++ problems").
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from judge.config import settings
from judge.grading.cpp import prepare, screen
from judge.grading.cpp.diagnostics import compile_error
from judge.grading.cpp.toolchain import Compiler
from judge.sandbox import Limits, grants, run_sandboxed

HARNESS = Path(__file__).resolve().parent / "harness" / "pj_judge.hpp"
RUNTIME = HARNESS.parent / "pj_judge_rt.cpp"
RUNTIME_OBJECT = "pj_judge_rt.o"
COMPILE_LIMITS = Limits(wall_s=180, cpu_s=90, memory_mb=2048, processes=32, file_size_mb=256,
                        open_files=256, output_bytes=256_000, tmp_mb=512)
FORMAT = 2
USER = "user.cpp"


@dataclass
class Build:
    binary: Path | None            # stripped: what runs
    debug: Path | None             # unstripped: for the judge's symbolizer only
    compile_error: dict | None
    compile_s: float               # CPU seconds of the compiler (0 when cached)
    wall_s: float
    cached: bool
    user_suffix: str               # how the student's file ends in the binary's paths
    flags: list[str]


def cache_key(role: str, source: str, version: str, cc: Compiler, flags: list[str]) -> str:
    h = hashlib.sha256()
    for part in (str(FORMAT), role, source, version, cc.ident, " ".join(flags),
                 HARNESS.read_text(encoding="utf-8"), RUNTIME.read_text(encoding="utf-8"),
                 _own_digest()):
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


def _own_digest() -> str:
    """The rewrite and the screen are part of what a binary is."""
    from judge.problem import cpp_lexer

    here = Path(__file__).resolve().parent
    files = [here / "prepare.py", here / "screen.py", Path(cpp_lexer.__file__),
             here / "cuda.py", here / "cuda_build.py", here / "harness" / "pj_cuda.cuh",
             here / "harness" / "pj_cublas.cuh", here / "harness" / "emu" / "cuda_runtime.h"]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()


def build(problem, source: str, role: str, cc: Compiler, sanitize: str, test_source: str,
          std: str = "c++20", nvcc: str | None = None) -> Build:
    """`role`: "reference" | "submission". Returns the cached build when there is one. A
    CUDA problem (cuda_build.py) builds with `nvcc` where it is given, else for the
    emulator with `cc`."""
    if problem.language == "cuda":
        from judge.grading.cpp import cuda_build
        flags = cuda_build.flags(nvcc) + [f"-DPJ_ROLE_{role.upper()}"]
    else:
        flags = cc.flags(sanitize, std) + [f"-DPJ_ROLE_{role.upper()}"] + \
            (["-DPJ_LEAK_CHECK"] if sanitize == "address,undefined" else [])
    key = cache_key(role, source, problem.version, cc, flags)
    folder = settings().cache_dir / "cpp-builds" / key[:2] / key
    with _locked(folder):
        done = _load(folder, flags)
        if done is not None:
            return done
        made = _compile(problem, source, role, cc, flags, test_source, folder, nvcc)
        stored = _load(folder, flags, cached=False, made=made)
        if stored is None:
            raise RuntimeError(f"the build in {folder} was not stored")
        return stored


@contextlib.contextmanager
def _locked(folder: Path):
    folder.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(folder.parent.parent, 0o700)  # builds hold hidden tests' code: root only
    with open(f"{folder}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _load(folder: Path, flags, cached: bool = True, made: Build | None = None) -> Build | None:
    meta = folder / "build.json"
    if not meta.is_file():
        return None
    d = json.loads(meta.read_text(encoding="utf-8"))
    binary = folder / "bin" if (folder / "bin").is_file() else None
    return Build(binary, folder / "bin.debug" if binary else None, d["compile_error"],
                 0.0 if cached else (made.compile_s if made else 0.0),
                 0.0 if cached else (made.wall_s if made else 0.0), cached, d["user_suffix"],
                 flags)


def _store(folder: Path, made: Build) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=folder.parent))
    if made.binary is not None and made.debug is not None:
        shutil.copy2(made.binary, tmp / "bin")
        shutil.copy2(made.debug, tmp / "bin.debug")
    (tmp / "build.json").write_text(json.dumps({"compile_error": made.compile_error,
                                                "user_suffix": made.user_suffix}),
                                    encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)


def _compile(problem, source: str, role: str, cc: Compiler, flags: list[str],
             test_source: str, into: Path, nvcc: str | None = None) -> Build:
    """Builds in a sealed temporary folder and stores the outcome `into` the cache."""
    t0 = time.perf_counter()
    key = secrets.token_hex(8)
    runtime, cpu0 = (None, 0.0) if problem.language == "cuda" else runtime_object(cc, flags)
    root = Path(tempfile.mkdtemp(prefix=f"judge-{problem.id}-p{os.getpid()}-cxx-"))
    try:
        if problem.language == "cuda":
            from judge.grading.cpp.cuda_build import CudaLayout
            layout: _Layout = CudaLayout(root, key, nvcc)
        else:
            layout = _Layout(root, key, runtime)
        prepared = layout.write(source, test_source)
        grants.seal(str(root))
        ce = screen.raw(source)
        if ce is None:
            screened, cpu = layout.preprocess(cc, flags, prepared)
            ce = screened.refusal
        else:
            cpu = 0.0
        cpu += cpu0
        if ce is not None:
            made = _refused(ce, layout, flags, cpu, t0)
        else:
            layout.user_header(prepared, screened.macros, role)
            out, cpu2 = layout.compile(cc, flags)
            cpu += cpu2
            made = Build(None, None, compile_error(out, layout.user_suffix, layout.user_name), cpu,
                         time.perf_counter() - t0, False, layout.user_suffix, flags) \
                if out is not None else \
                Build(layout.scratch / "bin", layout.scratch / "bin.debug", None, cpu,
                      time.perf_counter() - t0, False, layout.user_suffix, flags)
        _store(into, made)
        return made
    finally:
        grants.forget(str(root))
        shutil.rmtree(root, ignore_errors=True)


def _refused(ce: tuple, layout: "_Layout", flags, cpu: float, t0: float) -> Build:
    line, why = ce
    where = f" ({layout.user_name}, line {line})" if line else ""
    return Build(None, None, {"exc_type": "CompileError", "line": line,
                              "message": f"{why}{where}", "traceback": None}, cpu,
                 time.perf_counter() - t0, False, layout.user_suffix, flags)


def runtime_object(cc: Compiler, flags: list[str]) -> tuple[Path, float]:
    """(harness/pj_judge_rt.cpp compiled with `flags`, the CPU seconds that took: 0 when it
    was cached). The judge's own code, no student's: compiled once per compiler, flags and
    harness, in the compile sandbox as every build is. The same for both roles (the role
    changes nothing in it)."""
    flags = [f for f in flags if not f.startswith("-DPJ_ROLE_")] + ["-DPJ_RUNTIME"]
    h = hashlib.sha256()
    for part in (str(FORMAT), cc.ident, " ".join(flags), HARNESS.read_text(encoding="utf-8"),
                 RUNTIME.read_text(encoding="utf-8")):
        h.update(part.encode("utf-8") + b"\0")
    folder = settings().cache_dir / "cpp-builds" / "rt" / h.hexdigest()
    with _locked(folder):
        if (folder / RUNTIME_OBJECT).is_file():
            return folder / RUNTIME_OBJECT, 0.0
        root = Path(tempfile.mkdtemp(prefix=f"judge-rt-p{os.getpid()}-cxx-"))
        try:
            inc, scratch = root / "inc", root / "run"
            for d in (inc, scratch):
                d.mkdir()
            for f in (HARNESS, RUNTIME):
                shutil.copy2(f, inc / f.name)
                os.chmod(inc / f.name, 0o644)
            grants.seal(str(root))
            out = scratch / RUNTIME_OBJECT
            r = run_sandboxed([cc.path, *flags, "-c", "-iquote", str(inc), str(inc / RUNTIME.name),
                               "-o", str(out)], ro_binds=[str(inc), "/usr"], scratch=str(scratch),
                              limits=COMPILE_LIMITS, env={"LC_ALL": "C"})
            if r.returncode != 0 or not out.is_file():
                tail = r.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
                raise RuntimeError(f"the judge's harness ({RUNTIME.name}) does not compile with "
                                   f"{cc.name} {' '.join(flags)}: {' | '.join(tail)}")
            tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=folder.parent))
            shutil.copy2(out, tmp / RUNTIME_OBJECT)
            shutil.rmtree(folder, ignore_errors=True)
            tmp.rename(folder)
            return folder / RUNTIME_OBJECT, r.cpu_s or 0.0
        finally:
            grants.forget(str(root))
            shutil.rmtree(root, ignore_errors=True)


class _Layout:
    """The build's folder: inc/ (the harness, and its compiled functions: runtime_object),
    u/ (the student's file), t-<key>/ (the prepared test and its header: names nobody
    outside this build knows), run/ (scratch)."""
    user_name = USER

    def __init__(self, root: Path, key: str, runtime: Path | None = None):
        self.root, self.key, self.runtime = root, key, runtime
        self.inc, self.user_dir, self.test_dir = root / "inc", root / "u", root / f"t-{key}"
        self.scratch = root / "run"
        for d in (self.inc, self.user_dir, self.test_dir, self.scratch):
            d.mkdir()
        self.user = self.user_dir / USER
        self.main = self.test_dir / f"{key}.cpp"
        self.header = self.test_dir / f"pj_user_{key}.h"

    @property
    def user_suffix(self) -> str:
        return f"/u/{USER}"

    def write(self, source: str, test_source: str) -> prepare.Prepared:
        shutil.copy2(HARNESS, self.inc / HARNESS.name)
        if self.runtime is not None:
            shutil.copy2(self.runtime, self.inc / RUNTIME_OBJECT)
        self.user.write_text(source, encoding="utf-8", errors="surrogateescape")
        prepared = prepare.prepare(test_source, self.key)
        self.main.write_text(prepared.text + prepare.tail(prepared, self.key), encoding="utf-8")
        self.user_header(prepared, [], "submission")  # for the preprocessor's pass
        for p in (self.inc, self.user_dir, self.test_dir):
            for f in p.iterdir():
                os.chmod(f, 0o644)
        return prepared

    def user_header(self, prepared, undefs: list[str], role: str) -> None:
        self.header.write_text(prepare.user_header(prepared, self.key, str(self.user), undefs,
                                                   role), encoding="utf-8")
        os.chmod(self.header, 0o644)

    def _screen(self, text: str) -> screen.Screened:
        return screen.preprocessed(text, str(self.user), ("/usr",), str(self.inc / HARNESS.name))

    def _run(self, argv: list[str]):
        binds = [str(self.inc), str(self.user_dir), str(self.test_dir), "/usr"]
        return run_sandboxed(argv, ro_binds=binds, scratch=str(self.scratch),
                             limits=COMPILE_LIMITS, env={"LC_ALL": "C"})

    def _cc(self, cc: Compiler, flags: list[str]) -> list[str]:
        objects = [str(self.inc / RUNTIME_OBJECT)] if self.runtime is not None else []
        return [*self._pre(cc, flags), *objects]

    def _pre(self, cc: Compiler, flags: list[str]) -> list[str]:
        """The preprocessor's pass (screen.py reads its output)."""
        return [cc.path, *flags, "-iquote", str(self.inc), str(self.main)]

    def preprocess(self, cc: Compiler, flags, prepared) -> tuple[screen.Screened, float]:
        out = self.scratch / "pre.ii"
        # to stdout, so that what a failing pass wrote is kept (its -o file would be removed)
        r = self._run(["/bin/sh", "-c", '"$@" > "$0"', str(out), *self._pre(cc, flags),
                       "-E", "-dD"])
        text = out.read_text(encoding="utf-8", errors="replace") if out.is_file() else ""
        out.unlink(missing_ok=True)
        found = self._screen(text)
        if r.returncode != 0 and found.refusal is None:
            # never compiled unscreened: what the preprocessor could not finish is refused
            ce = compile_error(r.stderr.decode("utf-8", "replace"), self.user_suffix,
                               self.user_name)
            found.refusal = (ce["line"], ce["message"].rsplit(f" ({self.user_name}, line", 1)[0]
                             if ce["line"] else ce["message"])
        return found, r.cpu_s or 0.0

    def compile(self, cc: Compiler, flags) -> tuple[str | None, float]:
        """(the compiler's messages when it failed, else None; CPU seconds)."""
        exe, debug = self.scratch / "bin", self.scratch / "bin.debug"
        script = ('"$@" -o "$0.debug" && cp "$0.debug" "$0" && strip --strip-all "$0" '
                  '&& chmod 755 "$0"')
        r = self._run(["/bin/sh", "-c", script, str(exe), *self._cc(cc, flags)])
        if r.returncode == 0 and exe.is_file() and debug.is_file():
            return None, r.cpu_s or 0.0
        text = r.stderr.decode("utf-8", "replace")
        if r.timed_out or r.memory_exceeded:
            text += "\nerror: the compiler ran out of " + ("time" if r.timed_out else "memory")
        return text, r.cpu_s or 0.0
