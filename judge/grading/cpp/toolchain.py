"""Which C++ compilers this host has, how each is called, and which sanitizers each can
build and link (`judge doctor` lists them; the grading uses the first that works).

The flags are the handbook's (`-std=c++20 -g -O1 -Wall -Wextra -pthread` and
`-fsanitize=address,undefined`, or `thread` for `sanitize: thread`), plus what the judge
needs of them: UBSan stops at its first report (`-fno-sanitize-recover=all`), so a report
ends the case it happened in; the sanitizer runtimes are linked statically, so a run needs
no library beyond the C++ runtime every run's image already has; plain diagnostics, so the
first error can be read off reliably.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field

COMPILERS = ("g++", "clang++")
SANITIZE = ("address,undefined", "thread", "none")
BASE_FLAGS = ("-g", "-O1", "-Wall", "-Wextra", "-pthread", "-fdiagnostics-plain-output",
              "-fno-diagnostics-show-caret")


@dataclass(frozen=True)
class Compiler:
    name: str            # "g++" | "clang++"
    path: str            # as found on PATH (the sandbox binds the host's /usr for a compile)
    version: str         # the first line of --version
    sanitizers: tuple[str, ...] = ()   # of SANITIZE, those that built and ran here

    @property
    def ident(self) -> str:
        """What a compiled binary depends on: part of every build's cache key."""
        return hashlib.sha256(f"{self.path}\0{self.version}".encode()).hexdigest()[:16]

    def flags(self, sanitize: str, std: str = "c++20") -> list[str]:
        out = [f"-std={std}", *BASE_FLAGS]
        if self.name == "clang++":  # clang's spelling of the plain diagnostics
            plain = ("-fdiagnostics-plain-output", "-fno-diagnostics-show-caret")
            out = [f for f in out if f not in plain] + ["-fno-color-diagnostics",
                                                         "-fno-caret-diagnostics"]
        if sanitize == "address,undefined":
            out += ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    "-fno-omit-frame-pointer"]
            out += ["-static-libasan", "-static-libubsan"] if self.name == "g++" else []
        elif sanitize == "thread":
            out += ["-fsanitize=thread"] + (["-static-libtsan"] if self.name == "g++" else [])
        return out


@dataclass
class Toolchain:
    compilers: list[Compiler] = field(default_factory=list)
    addr2line: str | None = None
    strip: str | None = None
    nvcc: str | None = None

    def pick(self, sanitize: str) -> Compiler | None:
        return next((c for c in self.compilers if sanitize in c.sanitizers), None)


_found: list[Toolchain] = []
_lock = threading.Lock()


def find(refresh: bool = False) -> Toolchain:
    """This host's toolchain, probed once per process (each compiler builds and runs a tiny
    program with each sanitizer: a sanitizer whose runtime is missing is not listed)."""
    with _lock:
        if refresh or not _found:
            _found[:] = [_probe()]
        return _found[0]


def _probe() -> Toolchain:
    tc = Toolchain(addr2line=shutil.which("addr2line"), strip=shutil.which("strip"),
                   nvcc=shutil.which("nvcc") or _existing("/usr/local/cuda/bin/nvcc"))
    for name in COMPILERS:
        path = shutil.which(name)
        if not path:
            continue
        # not resolved: clang++ is a link to clang, which acts by the name it is called by
        path = os.path.abspath(path)
        version = _version(path)
        if version is None:
            continue
        c = Compiler(name, path, version)
        tc.compilers.append(Compiler(name, path, version,
                                     tuple(s for s in SANITIZE if _builds(c, s))))
    return tc


def _existing(path: str) -> str | None:
    return path if os.path.exists(path) else None


def _version(path: str) -> str | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.splitlines()[0].strip() if out.returncode == 0 and out.stdout else None


_PROBE = "#include <cstdio>\n#include <vector>\nint main() { std::vector<int> v(3); " \
         "std::printf(\"%d\\n\", int(v.size())); }\n"


def _builds(c: Compiler, sanitize: str) -> bool:
    """The judge's own fixed program, compiled and run on the host: no submission is in it."""
    with tempfile.TemporaryDirectory(prefix="judge-cxx-probe-") as d:
        src, exe = os.path.join(d, "p.cpp"), os.path.join(d, "p")
        with open(src, "w") as f:
            f.write(_PROBE)
        try:
            made = subprocess.run([c.path, *c.flags(sanitize), src, "-o", exe],
                                  capture_output=True, timeout=120)
            if made.returncode != 0:
                return False
            ran = subprocess.run([exe], capture_output=True, timeout=30,
                                 env={"ASAN_OPTIONS": "detect_leaks=0", "PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.SubprocessError):
            return False
        return ran.returncode == 0 and ran.stdout.strip() == b"3"


def describe() -> list[tuple[str, str | None, str]]:
    """(name, what was found or None, what it is for) rows for `judge doctor`."""
    tc = find()
    rows = []
    for name in COMPILERS:
        c = next((x for x in tc.compilers if x.name == name), None)
        rows.append((name, f"{c.version} ({c.path})" if c else None,
                     "builds C++ problems (the first one found is used)"))
        for s in SANITIZE[:2]:
            ok = bool(c and s in c.sanitizers)
            rows.append((f"{name} -fsanitize={s}", "builds and runs" if ok else None,
                         "ASan + UBSan: most C++ problems" if s != "thread"
                         else "TSan: problems with `sanitize: thread`"))
    rows.append(("addr2line", tc.addr2line, "names the student's line in a sanitizer report"))
    rows.append(("nvcc", tc.nvcc, "builds CUDA C++ problems for the GPU (with a CUDA device)"))
    rows.extend(_cuda_rows(tc))
    return rows


def _cuda_rows(tc: Toolchain) -> list[tuple[str, str | None, str]]:
    """Where this worker grades CUDA C++ problems: on its GPU, on the CPU emulator, or not."""
    import glob

    from judge.grading.cpp import cuda

    nodes = sorted(glob.glob("/dev/nvidia[0-9]*"))
    emu = next((c for c in tc.compilers if "none" in c.sanitizers), None)
    gpu = cuda.gpu_toolchain()
    return [("CUDA device", ", ".join(nodes) or None, "runs CUDA C++ problems built with nvcc"),
            ("CUDA C++ grading", "nvcc on the GPU" if gpu else
             f"the CPU emulator ({emu.name}), correctness only" if emu else None,
             "where no GPU and nvcc are found, the emulator grades .cu problems; those it cannot "
             "model need a GPU worker")]
