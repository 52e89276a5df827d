"""CUDA C++ problems (the .cu halves of the handbook's cuda book): what differs from a C++
problem (docs/IMPORTED_GRADING.md, "CUDA C++").

Two ways to build one. On a worker with `nvcc` and a CUDA device, nvcc with the handbook's
flags (`-O2 -std=c++17 -arch=native -lineinfo`), in the sandbox with the GPU's device nodes;
the run gets them too. Elsewhere, g++ against the judge's emulator (harness/emu/
cuda_runtime.h: a fiber per CUDA thread, the barriers real), correctness only; the source is
rewritten first (`translate`): `k<<<g, b>>>(args)` is no C++. A problem whose test or
reference uses what the emulator cannot do (`emulator_gaps`) needs a GPU worker: the queue
sends it only to workers that say they have one, and a worker without gives no verdict.

The run is one process (a GPU context does not survive a fork): its records (pj_cuda.cuh
says their format) are read into the C++ path's Stream, one case per name the test passes to
a helper, and judged as a C++ run's are, against the reference binary's. `check_close`'s
record holds the device's values: the student's build records its own output (the expected
argument is taken out of its binary, as for C++), the reference's build the expected values,
and the judge compares the two with the test's tolerances (`close_failure`).
"""

from __future__ import annotations

import glob
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from judge.grading.cpp.records import Case, Observation, Stream, _text
from judge.problem.cpp_lexer import DIRECTIVE, IDENT, PUNCT, STRING, LexError, Token, tokens

HARNESS_DIR = Path(__file__).resolve().parent / "harness"
EMU_DIR = HARNESS_DIR / "emu"
NVCC_FLAGS = ("-O2", "-std=c++17", "-arch=native", "-lineinfo")
EMU_FLAGS = ("-std=c++17", "-O1", "-g", "-DPJ_EMU", "-fdiagnostics-plain-output",
             "-fno-diagnostics-show-caret", "-Wl,-z,relro,-z,now")
DEADLOCK_EXIT = 87
LOCKDOWN_EXIT = 88
# what the emulator does not model: a problem (or a file) using it is for a GPU worker
GPU_ONLY_HEADERS = ("cooperative_groups", "cuda_bf16.h", "cuda_fp16.h", "cuda_fp8.h", "mma.h",
                    "cuda/pipeline", "cuda/barrier", "cuda_pipeline.h", "cublas_v2.h", "cub/",
                    "thrust/", "nccl.h", "cuda.h", "cute/", "cutlass/")
GPU_ONLY_CODE = ("asm", "__asm__", "cudaLaunchCooperativeKernel", "__cluster_dims__",
                 "__nv_bfloat16", "__half", "wmma", "cudaLaunchKernel", "cudaGraph_t",
                 "__cvta_generic_to_shared", "__pipeline_memcpy_async")
# what the student's file may not write (CE at its line): code the test would run without
# calling it (constructors, replaced allocation or library functions, specialisations of the
# test's and the library's templates), or attributes that move code
FORBIDDEN = {
    "constructor": "a function that runs before main", "destructor": "a function that runs "
    "at exit", "init_priority": "an initialisation order", "section": "code in a section "
    "of its own", "alias": "an alias of another function", "ifunc": "a resolver",
    "weak": "a weak symbol", "weakref": "a weak symbol", "atexit": "exit-time code",
    "at_quick_exit": "exit-time code", "on_exit": "exit-time code",
    "__cxa_atexit": "exit-time code", "set_terminate": "a terminate handler",
    "signal": "a signal handler", "sigaction": "a signal handler",
}
LIBRARY_NAMES = {"malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign",
                 "memalign", "valloc", "memcpy", "memmove", "memset", "memcmp", "write",
                 "printf", "fprintf", "snprintf", "exit", "_exit", "abort", "getenv",
                 "cudaMemcpy", "cudaMalloc", "cudaFree", "cudaMemset", "cudaDeviceSynchronize",
                 "cudaGetLastError"}


def gpu_toolchain() -> str | None:
    """nvcc's path where this worker has nvcc and a CUDA device (its device nodes), else
    None: then the emulator builds .cu problems."""
    from judge.config import settings
    from judge.grading.cpp import toolchain

    if settings().force_cpu or not glob.glob("/dev/nvidia[0-9]*"):
        return None
    return toolchain.find().nvcc


def cuda_root(nvcc: str) -> str:
    """The CUDA folder nvcc belongs to (its include/ holds cuda_runtime.h). nvcc on PATH may
    be a link or a wrapper script, so the usual places are tried after its own."""
    tried = [Path(os.path.realpath(nvcc)).parent.parent, Path("/usr/local/cuda"),
             *sorted(Path("/usr/local").glob("cuda-*"), reverse=True)]
    found = next((p for p in tried if (p / "include" / "cuda_runtime.h").is_file()), tried[0])
    return str(found.resolve())


# ---------------------------------------------------------------- what the emulator can do
def emulator_gaps(text: str) -> list[str]:
    """What in a .cu file the emulator does not model (empty: it can grade it)."""
    try:
        toks = tokens(text)
    except LexError:
        return []
    out = []
    for t in toks:
        if t.kind == DIRECTIVE and t.name == "include":
            name = re.sub(r'^\s*(?:#|%:)\s*include\s*[<"]([^>"]+)[>"].*$', r"\1", t.text.strip())
            if any(h in name for h in GPU_ONLY_HEADERS) and name not in out:
                out.append(name)
        elif t.kind == IDENT and t.text in GPU_ONLY_CODE and t.text not in out:
            out.append(t.text)
    return out


def emulable(problem) -> bool:
    """Whether the problem's own files (its test, its reference) are within the emulator's
    reach: what decides where the queue sends it."""
    texts = [problem.native_test_path, problem.reference_path]
    return not any(emulator_gaps(p.read_text(encoding="utf-8")) for p in texts
                   if p is not None and p.is_file())


def needs_gpu_worker(problem) -> bool:
    return getattr(problem, "language", "python") == "cuda" and not emulable(problem)


# ---------------------------------------------------------------- the emulator's rewrite
def translate(text: str) -> str:
    """`k<<<g, b, s, st>>>(args)` -> `::pjemu::launcher(k, g, b, s, st)(args)` and
    `extern __shared__ T name[];` -> a pointer to the launch's dynamic shared memory, in
    place: every line keeps its number (the compiler's messages name the student's lines)."""
    try:
        toks = tokens(text)
    except LexError:
        return text  # the screen refuses it, at its line
    edits: list[tuple[int, int, str]] = []
    k = 0
    while k < len(toks) - 1:
        if _triple(toks, k, "<<", "<"):
            close = next((j for j in range(k + 2, len(toks) - 1) if _triple(toks, j, ">>", ">")),
                         None)
            if close is None:
                break
            start = _callee_start(toks, k)
            edits += [(toks[start].start, toks[start].start, "::pjemu::launcher("),
                      (toks[k].start, toks[k + 1].end, ", "),
                      (toks[close].start, toks[close + 1].end, ")")]
            k = close + 2
            continue
        if toks[k].kind == IDENT and toks[k].text == "extern" and toks[k + 1].text == "__shared__":
            edit = _dynamic_shared(toks, k)
            if edit is not None:
                edits.append(edit)
        k += 1
    out, at = [], 0
    for s, e, new in sorted(edits):
        out += [text[at:s], new]
        at = e
    return "".join(out) + text[at:]


def _triple(toks: list[Token], k: int, a: str, b: str) -> bool:
    return toks[k].kind == PUNCT and toks[k].text == a and toks[k + 1].text == b and \
        toks[k + 1].start == toks[k].end


def _callee_start(toks: list[Token], k: int) -> int:
    """The first token of the kernel's name before `<<<`: `ns::kernel<T, 4>`."""
    j = k - 1
    if j >= 0 and toks[j].text in (">", ">>"):
        depth = 0
        while j >= 0:
            depth += {">": 1, ">>": 2, "<": -1, "<<": -2}.get(toks[j].text, 0)
            if depth <= 0 and toks[j].text in ("<", "<<"):
                break
            j -= 1
        j -= 1
    while j >= 2 and toks[j - 1].text == "::" and toks[j - 2].kind == IDENT:
        j -= 2
    if j >= 1 and toks[j - 1].text == "::":
        j -= 1
    return max(j, 0)


def _dynamic_shared(toks: list[Token], k: int) -> tuple[int, int, str] | None:
    end = next((j for j in range(k, min(len(toks), k + 40)) if toks[j].text == ";"), None)
    if end is None or end - k < 6 or toks[end - 1].text != "]" or toks[end - 2].text != "[":
        return None
    name = toks[end - 3]
    parts, j = [], k + 2
    while j < end - 3:
        if toks[j].text == "__align__" and j + 1 < end and toks[j + 1].text == "(":
            j = next(i for i in range(j, end) if toks[i].text == ")") + 1
            continue
        parts.append(toks[j].text)
        j += 1
    if not parts or name.kind != IDENT:
        return None
    t = " ".join(parts)
    return (toks[k].start, toks[end].end,
            f"{t}* {name.text} = reinterpret_cast<{t}*>(::pjemu::dynamic_shared());")


# ---------------------------------------------------------------- the student's file
def forbidden(region: list[tuple[int, str]]) -> tuple[int, str] | None:
    """Read off the student's preprocessed lines (screen.preprocessed's `extra`)."""
    for line, text in region:
        try:
            toks = tokens(text)
        except LexError:
            continue
        for i, t in enumerate(toks):
            why = _forbidden_token(toks, i)
            if why:
                return line, why
    return None


def _forbidden_token(toks: list[Token], i: int) -> str | None:
    t, nxt = toks[i], toks[i + 1].text if i + 1 < len(toks) else ""
    word = t.text.strip("_") if t.kind == IDENT else ""
    if word in FORBIDDEN or t.text in FORBIDDEN:
        return f"`{t.text}` ({FORBIDDEN.get(t.text) or FORBIDDEN[word]}) is not allowed in a " \
               "CUDA solution: the test calls your code, nothing else runs it"
    if t.kind == IDENT and t.text == "operator" and nxt in ("new", "delete"):
        return f"replacing `operator {nxt}` is not allowed: the test's memory is not your code's"
    if t.kind == IDENT and t.text in ("namespace",) and nxt in ("std", "pj", "pjemu"):
        return f"`namespace {nxt}` is not yours to add to"
    if t.kind == IDENT and t.text == "template" and nxt == "<" and i + 2 < len(toks) and \
            toks[i + 2].text == ">":
        return "an explicit specialisation (`template <>`) is not allowed in a CUDA solution"
    if t.kind == STRING and t.text == '"C"' and i > 0 and toks[i - 1].text == "extern":
        return '`extern "C"` is not allowed: your functions keep C++ names'
    if t.kind == IDENT and t.text in LIBRARY_NAMES and nxt == "(" and _defines(toks, i):
        return f"a function of your own named `{t.text}` is not allowed: it is the library's"
    return None


def _defines(toks: list[Token], i: int) -> bool:
    """`name(...)` preceded by a type (not `.`, `->`, `::` of a call) and followed by `{`:
    a definition."""
    if i == 0 or toks[i - 1].text in (".", "->", "::", "(", ",", "=", "return"):
        return False
    depth, j = 0, i + 1
    while j < len(toks):
        depth += {"(": 1, ")": -1}.get(toks[j].text, 0)
        if depth == 0:
            break
        j += 1
    return j + 1 < len(toks) and toks[j + 1].text in ("{", "noexcept", "throw")


_NVCC_DIAG = re.compile(r"^(?P<path>[^\s(][^(]*)\((?P<line>\d+)\): (?P<kind>error|warning)",
                       re.M)


def gcc_style(text: str) -> str:
    """nvcc's front end's `path(12): error: ...` as g++ writes it (`path:12:1: error: ...`), so
    that diagnostics.py finds the student's line either way."""
    return _NVCC_DIAG.sub(lambda m: f"{m['path']}:{m['line']}:1: {m['kind']}", text)


# ---------------------------------------------------------------- the run's records
def read_stream(data: bytes, returncode: int | None, signalled: int | None) -> Stream:
    """The records of one run (pj_cuda.cuh writes them) as the C++ path's Stream: every case
    but the last ends when the next begins; the last ends as the process did."""
    s = Stream()
    for raw in data.split(b"\n"):
        if not raw:
            continue
        f = raw.decode("ascii", "replace").split(" ")
        cur = s.cases[-1] if s.cases else None
        try:
            if f[0] == "C" and len(f) == 3 and int(f[1]) == len(s.cases):
                if cur is not None and cur.how is None:
                    cur.end, cur.how = cur.end or "done", "exit 0"
                s.cases.append(Case(int(f[1]), _text(f[2])))
            elif cur is not None and f[0] == "O" and len(f) == 4 and cur.how is None and \
                    f[1] in ("close", "launch", "ok") and _text(f[2]) == cur.name:
                cur.observations.append(Observation(f[1], cur.name, _text(f[3])))
            elif cur is not None and f[0] == "X" and len(f) == 3 and cur.end is None:
                cur.end, cur.why = f[1], _text(f[2])
            else:
                raise ValueError(f[0])
        except (ValueError, IndexError):
            s.stray += 1
            if cur is not None:
                cur.tampered = True
    _last(s, returncode, signalled)
    return s


def _last(s: Stream, returncode: int | None, signalled: int | None) -> None:
    if not s.cases or s.cases[-1].how is not None:
        return
    last = s.cases[-1]
    if signalled:
        last.how = f"signal {signalled}"
    elif returncode == 0:
        last.end, last.how = last.end or "done", "exit 0"
    else:
        last.how = f"exit {returncode}"


@dataclass
class Close:
    rtol: float
    atol: float
    n: int
    values: list[float]


def parse_close(value: str) -> Close | None:
    f = value.split()
    try:
        rtol, atol, n = float(f[0]), float(f[1]), int(f[2])
        vals = [struct.unpack("<f", struct.pack("<I", int(b, 16)))[0] for b in f[3:]]
    except (ValueError, IndexError, struct.error):
        return None
    return Close(rtol, atol, n, vals)


def close_failure(want: str, got: str) -> str | None:
    """None when the student's output is within the reference's tolerance of the expected
    values, else what differs (as the student reads it)."""
    w, g = parse_close(want), parse_close(got)
    if w is None:
        return "the reference's record of this check cannot be read"
    if g is None or len(g.values) != len(w.values):
        if g is not None and g.n != w.n:
            return f"the output has {g.n} elements, expected {w.n}"
        return "the program's record of this check is not the tests'"
    stride = 1 if w.n <= 65536 else (w.n + 65535) // 65536
    # NaN (memory the kernel never wrote: device_empty fills it so) is never close
    bad = [i for i, (a, b) in enumerate(zip(g.values, w.values))
           if not (a == b or abs(a - b) <= w.atol + w.rtol * abs(b))]
    if not bad:
        return None
    i = bad[0]
    checked = "" if stride == 1 else f" (of {len(w.values)} checked, every {stride}th)"
    return (f"{len(bad)} of {w.n} elements differ{checked}, the first at index {i * stride}: "
            f"expected {w.values[i]:.6g}, got {g.values[i]:.6g}")


def nvcc_argv(nvcc: str, inc: str, main: str, out: str, links_cublas: bool) -> list[str]:
    return [nvcc, *NVCC_FLAGS, "-I", inc, main, "-o", out] + (["-lcublas"] if links_cublas
                                                             else [])
