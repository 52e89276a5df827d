"""A sanitizer's report, as one line a student reads: which sanitizer, what it found, and the
line of the student's file where it happened.

The binary that ran is stripped and runs with `symbolize=0`, so its reports name code by
offset (`(bin+0x1a2b)`). Here the judge names them with `addr2line` on the unstripped copy,
which it keeps to itself; addr2line reads a file the student's code shaped (its debug
sections), so it runs in the sandbox too. UBSan's reports carry their line already
(`user.cpp:12:5: runtime error: ...`). A frame outside the student's file is not named: the
test's functions are not the student's to read.

Reports come on the run's stderr, which the harness cuts by case (`==PJ-CASE <n>==`). That
text is the student's process's to write as well: a report it forges can only cost it
the case (the harness said the case died), never win one.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from judge.sandbox import Limits, grants, run_sandboxed

_MARK = re.compile(r"\n==PJ-CASE (\d+)==\n")
_HEAD = [
    ("LeakSanitizer", re.compile(r"ERROR: LeakSanitizer: (detected memory leaks)")),
    ("AddressSanitizer", re.compile(r"ERROR: AddressSanitizer: (.+?)(?: on (?:unknown )?"
                                    r"(?:address )?0x| at pc | \(|:? ?$)", re.M)),
    ("ThreadSanitizer", re.compile(r"WARNING: ThreadSanitizer: ([\w -]+?)(?: \(|$)", re.M)),
]
_UBSAN = re.compile(r"^(?P<path>\S+?):(?P<line>\d+):(?P<col>\d+): runtime error: (?P<msg>.*)$",
                    re.M)
# "#1 0x55d8e1a1ef86  (/path/bin+0xe4f86)" (ASan), "#0 <null> <null> (bin+0xc1670)" (TSan);
# clang's runtimes add "(BuildId: ...)"
_FRAME = re.compile(r"^\s*#(\d+) .*?\((?P<mod>[^()]+?)\+0x(?P<off>[0-9a-f]+)\)"
                    r"(?:\s*\(BuildId: [0-9a-f]+\))?\s*$", re.M)
SYMBOLIZE_LIMITS = Limits(wall_s=60, cpu_s=20, memory_mb=1024, processes=8,
                          output_bytes=64_000)
MAX_FRAMES = 24


@dataclass
class Report:
    tool: str                 # "AddressSanitizer", "UndefinedBehaviorSanitizer", ...
    kind: str                 # "heap-use-after-free", "data race", "memory leak", ...
    line: int | None          # in the student's file
    function: str | None      # the student's function there

    def message(self, user_name: str = "user.cpp") -> str:
        where = f"{user_name}, line {self.line}" + (f", in {self.function}" if self.function
                                                  else "") if self.line else \
            "not in your file's code: in the tests or the standard library, called from it"
        return f"{self.tool}: {self.kind} ({where})"


def by_case(stderr: str) -> dict[int, str]:
    """{case index: what was written to stderr while it ran}."""
    parts = _MARK.split("\n" + stderr)
    out: dict[int, str] = {}
    for i in range(1, len(parts) - 1, 2):
        out[int(parts[i])] = out.get(int(parts[i]), "") + parts[i + 1]
    return out


def find(text: str, binary_inside: str, debug: Path | None, user_suffix: str,
         own: str = "") -> Report | None:
    """The first report in `text` (a case's stderr), located in the student's file; `own`:
    its text, so that a function is named only when it is one of its own (a frame inlined
    into a library function carries the library's name with the student's line)."""
    m = _UBSAN.search(text)
    heads = [(tool, h) for tool, head in _HEAD if (h := head.search(text))]
    first = min(heads, key=lambda th: th[1].start(), default=None)
    if m and (first is None or m.start() < first[1].start()):
        in_user_file = m.group("path").endswith(user_suffix)
        return Report("UndefinedBehaviorSanitizer", m.group("msg").strip(),
                      int(m.group("line")) if in_user_file else None, None)
    if first is None:
        return None
    tool, h = first
    kind = "memory leak" if tool == "LeakSanitizer" else h.group(1).strip()
    # ASan names the binary by its path, TSan by its file name
    ours = (binary_inside, binary_inside.rsplit("/", 1)[-1])
    frames = [(int(f.group(1)), int(f.group("off"), 16)) for f in _FRAME.finditer(text, h.end())
              if f.group("mod") in ours][:MAX_FRAMES]
    line, function = _locate(frames, debug, user_suffix)
    words = re.sub(r"<.*>", "", (function or "").split("(")[0]).split()
    base = words[-1].rsplit("::", 1)[-1].lstrip("~") if words else ""
    if not base or not re.search(rf"(?<!\w){re.escape(base)}(?!\w)", own):
        function = None
    return Report(tool, kind, line, function)


def _locate(frames: list[tuple[int, int]], debug: Path | None, user_suffix: str):
    if not frames or debug is None or shutil.which("addr2line") is None:
        return None, None
    # a return address points past its call: the call's line is the byte before
    addrs = [off - 1 if n > 0 else off for n, off in frames]
    for func, where in symbolize(debug, addrs):
        path, _, line = where.rpartition(":")
        line = line.split(" ")[0]
        if path.endswith(user_suffix) and line.isdigit():
            return int(line), (func if func and func != "??" else None)
    return None, None


def symbolize(debug: Path, addrs: list[int]) -> list[tuple[str, str]]:
    """[(function, file:line)] of every address, inlined frames included, innermost first.
    The run sees the host's /usr (addr2line is not in the image runs get), as a compile
    does."""
    addr2line = shutil.which("addr2line")
    if addr2line is None:
        return []
    with tempfile.TemporaryDirectory(prefix="judge-sym-") as d:
        folder = Path(d) / "bin"
        folder.mkdir()
        copy = folder / "debug"
        shutil.copyfile(debug, copy)
        copy.chmod(0o644)
        folder.chmod(0o755)
        scratch = Path(d) / "run"
        scratch.mkdir()
        grants.seal(d)
        try:
            r = run_sandboxed([addr2line, "-e", str(copy), "-f", "-C", "-i",
                               *[hex(a) for a in addrs]], ro_binds=[str(folder), "/usr"],
                              scratch=str(scratch), limits=SYMBOLIZE_LIMITS)
        finally:
            grants.forget(d)
    lines = r.stdout.decode("utf-8", "replace").splitlines() if r.returncode == 0 else []
    return list(zip(lines[0::2], lines[1::2]))
