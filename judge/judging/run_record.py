"""One run of one suite as the judging reads it: what the child said (its `ChildLog`) and how
the run ended (the sandbox's flags), with the CPU time per phase the parent measured (`clock`).

Three places make one, and every reader takes its fields as they are:
- the launcher (judge/grading/launch.py, `attempt`: every sandboxed run of a suite, native or
  imported, a warm fork or cold; judge/grading/suite_run.py asks it) fills it in as the run goes
  and once it has ended; while it runs (the live stream of verdicts) it already is the record,
  with `ended` False, the flags not yet set and `wall_s` the time so far;
- the hidden suite's shards (judge/grading/shards.py, `merge`): the shards' records, each made by
  the launcher, merged into one that reads as an unsharded run's, where they allow it;
- the page (judge/browser/page_run.py), where nothing is timed out, killed or limited by the
  judge: only `log`, `spawn_t` and `wall_s`, and no clock.

Standard library only: the page bundles this room.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from judge.judging.child_log import ChildLog
from judge.judging.clock import PhaseClock


@dataclass
class RunRecord:
    suite: str
    log: ChildLog
    spawn_t: float                      # when the child was asked for (time.time())
    wall_s: float = 0.0                 # how long it ran (so far, while `ended` is False)
    ended: bool = False                 # the run is over: the flags below are final
    returncode: int | None = None
    signal: int | None = None
    timed_out: bool = False
    timeout_kind: str | None = None     # "cpu" | "wall": which clock stopped it
    memory_exceeded: bool = False
    output_exceeded: bool = False
    disk_exceeded: bool = False         # it filled its scratch filesystem
    stopped_early: bool = False         # ended on purpose after a failing test: no limit, no crash
    stdout: bytes = b""
    stderr: bytes = b""
    layers: dict = field(default_factory=dict)
    missing_layers: list = field(default_factory=list)
    sandbox_error: str | None = None    # the sandbox itself failed (the judge's fault)
    clock: PhaseClock | None = None     # CPU time per phase, as the parent measured it
    attempts: int = 1                   # 2: the first run was stopped by the wall-clock net
    cpu_s: float | None = None          # the whole tree's
    wait_s: float | None = None         # how long a busy host held it back
    max_memory_bytes: int | None = None  # the cgroup's peak, where the host measures it
    shards: int = 1                     # N: merged from N shards; -N: run again unsharded

    @property
    def died(self) -> bool:
        """The child ended abnormally (killed, crashed, limits, non-zero status)."""
        return bool(self.timed_out or self.memory_exceeded or self.output_exceeded
                    or self.disk_exceeded or self.signal or (self.returncode not in (0, None)))

    @property
    def start_s(self) -> float | None:
        """From asking for the child to the runner's first line (interpreter + sandbox start)."""
        return None if self.log.started_t is None else max(0.0, self.log.started_t - self.spawn_t)

    def output_tail(self, limit: int = 2000) -> str:
        text = (self.stdout + self.stderr).decode("utf-8", "replace")
        return text[-limit:]
