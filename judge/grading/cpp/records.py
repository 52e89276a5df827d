"""The results channel of one C++ run, read back (pj_judge.hpp writes it):

    C <index> <name>                 a case starts (the harness, before it forks the case)
    O <kind> <what> <value>          an observation: eq (a value), opaque (one that could not
                                     be printed), ok (a condition), throws (what was thrown)
    X <end> <why>                    the case's own end: done, fail, exception, leak
    W <index> <cpu us> <how>         the harness saw the case's process end: "exit N",
                                     "signal N", "wall", "fork failed"

Text fields are hex. Lines are accepted only in that order, case after case, numbered from 0:
anything else (a line the student's code wrote out of turn, a number out of sequence) is
counted as `stray` and makes the case it falls in, or the last one before it, `tampered`. Reading is bounded: a stream
past MAX_BYTES or MAX_OBSERVATIONS per case stops being read (the case is then `overflow`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_BYTES = 8 << 20
MAX_OBSERVATIONS = 20_000
KINDS = ("eq", "opaque", "ok", "throws")
ENDS = ("done", "fail", "exception", "leak")


@dataclass(frozen=True)
class Observation:
    kind: str
    what: str
    value: str


@dataclass
class Case:
    index: int
    name: str
    observations: list[Observation] = field(default_factory=list)
    end: str | None = None        # of ENDS; None: the case's process never said
    why: str = ""
    how: str | None = None        # of the W line; None: the harness never saw it end
    cpu_s: float | None = None
    tampered: bool = False
    overflow: bool = False

    @property
    def finished(self) -> bool:
        return self.how is not None


@dataclass
class Stream:
    cases: list[Case] = field(default_factory=list)
    stray: int = 0
    truncated: bool = False


def _text(field_hex: str) -> str:
    if field_hex == "-":
        return ""
    return bytes.fromhex(field_hex).decode("utf-8", "replace")


class Reader:
    """Fed the channel's bytes as they come (run_sandboxed's `readers`)."""

    def __init__(self):
        self.stream, self._buf, self._seen = Stream(), b"", 0

    def feed(self, data: bytes) -> bool:
        """Returns True to stop the run: the stream is over its bound."""
        self._seen += len(data)
        if self._seen > MAX_BYTES:
            self.stream.truncated = True
            return True
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            self._line(line.decode("ascii", "replace").split(" "))
        return False

    def _line(self, f: list[str]) -> None:
        s, cur = self.stream, self.stream.cases[-1] if self.stream.cases else None
        try:
            if cur is None or cur.finished:
                if f[0] == "C" and len(f) == 3 and int(f[1]) == len(s.cases):
                    s.cases.append(Case(int(f[1]), _text(f[2])))
                    return
                raise ValueError(f[0])
            if f[0] == "O" and len(f) == 4 and cur.end is None and f[1] in KINDS:
                if len(cur.observations) >= MAX_OBSERVATIONS:
                    cur.overflow = True
                else:
                    cur.observations.append(Observation(f[1], _text(f[2]), _text(f[3])))
            elif f[0] == "X" and len(f) == 3 and cur.end is None and f[1] in ENDS:
                cur.end, cur.why = f[1], _text(f[2])
            elif f[0] == "W" and len(f) == 4 and int(f[1]) == cur.index:
                cur.cpu_s, cur.how = int(f[2]) / 1e6, _text(f[3])
            else:
                raise ValueError(f[0])
        except (ValueError, IndexError):
            # out of turn: whoever wrote it, the case it came in (or after) is not to be trusted
            s.stray += 1
            if cur is not None:
                cur.tampered = True
