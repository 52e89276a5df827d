"""Time limits of one suite run, in CPU time of the sandboxed process tree, phase by phase.

Why CPU time: how long a test takes on the wall clock depends on what else the host runs (a
busy grading box once made an accepted file TLE); the CPU time it needs does not. DMOJ and
ioi/isolate measure limits the same way.

Phases, in the order the runner announces them through its results pipe:

    boot    interpreter and pytest start-up; no submission code runs yet: only the whole
            run's limits (problem cpu_s, and the wall net below)
    import  "start" .. "imported": the submission's module-level code      limit `import_s`
    test    "test_started" .. "test_finished": setup, call, teardown      its own limit
    gap     everything else after the import: collection, between tests   limit `gap_s`

The runner is untrusted, so it only says *when* a phase changes; the CPU time charged to each
phase is the parent's own measurement of the whole tree (sandbox.usage). A lying runner can at
most move CPU time from one of its phases to another, each of which is limited, and the run
as a whole is limited too. What the runner reports about its own CPU time is used only for
display (it is finer grained), kept within the bounds the parent's own samples allow.

The runner stops a test itself at its limit (the test is TLE and the next one runs); the
parent stops the whole run at the limit plus GRACE_S, for a test that swallows its timeout.
A wall-clock net of WALL_FACTOR times that stops a phase that waits rather than computes
(sleep, a blocked read). Time the tree spent runnable but waiting for a CPU is not counted
against the net, so a busy host does not trip it; a run it stops anyway is run once more
before its test is given TLE (suite_run.py).

Limits come from the reference's measured CPU times: max(min_test_s, time_factor * ref).

The whole run has a CPU budget too, from its first line on: SUITE_FACTOR times what the
reference's run of the same tests took (import, tests, its costliest gap) plus min_test_s.
Without it an endless loop in every test held a grader for every test's limit in turn (78 s
for 21 tests); with it the run is stopped, the test it was in is TLE and the rest are NR.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol, TypeGuard

from judge.judging.test_id import TestId


class Usage(Protocol):
    """What the clock reads of a usage sample (judge.sandbox.usage.Usage has these fields; the
    page bundles this module without the sandbox, so it names the shape, not the class)."""
    @property
    def wall_s(self) -> float: ...
    @property
    def cpu_s(self) -> float | None: ...
    @property
    def wait_s(self) -> float: ...

WALL_FACTOR = 3.0
GRACE_S = 1.5   # the runner's own watchdog acts at the limit + 1 s: leave it the first word
SUITE_FACTOR = 2.0
# A whole grading's wall clock (less the time it waited for a CPU) is capped by its suites' CPU
# budgets plus this: one submission whose phases each slept just under their net, with forged
# tests adding phases, held a grader for 24 minutes on 2 s of CPU (issue 20).
WALL_ALLOWANCE_S = 60.0
# A phase stopped by the wall net that used less CPU than this share of its wall time slept
# (or blocked): it is not run again, since a busy host would have left it computing.
SLEPT_FRACTION = 0.1


def cpu_limit(limits, ref_cpu_s: float | None) -> float:
    """A phase's CPU limit from the problem's [limits] and the reference's CPU time for it."""
    return round(max(limits.min_test_s, limits.time_factor * float(ref_cpu_s or 0.0)), 3)


def wall_net(limit_s: float) -> float:
    """A multiple of the CPU time the parent lets a phase use before it stops it (limit plus
    grace), since a phase that computes all the time takes at least that much wall clock."""
    return WALL_FACTOR * (limit_s + GRACE_S)


def suite_wall_net(limits) -> float:
    """The wall clock a whole run may take: the problem's wall_s, or more where its CPU budget
    needs more on a host where it gets only part of a core."""
    return max(limits.wall_s, WALL_FACTOR * limits.cpu_s)


@dataclass(frozen=True)
class TimeLimits:
    tests: Mapping[str, float]     # node id inside the suite -> CPU seconds
    default_s: float               # a test missing from `tests` (a parametrized id)
    import_s: float
    gap_s: float
    budget_s: float | None = None  # CPU seconds for the whole run (None: only cpu_s)
    wall_cap_s: float | None = None  # what is left of the grading's wall clock (grading_cap)

    @classmethod
    def from_reference(cls, limits, ref_suite: dict, ref_tests: Mapping[str, dict]
                       ) -> "TimeLimits":
        """`ref_tests`: {"<suite>/<node>": reference entry} of the tests that will run."""
        tests = {TestId.parse(n).node: cpu_limit(limits, e.get("time_s"))
                 for n, e in ref_tests.items()}
        ref_total = sum(float(ref_suite.get(k) or 0.0) for k in ("import_s", "gap_s")) + sum(
            float(e.get("time_s") or 0.0) for e in ref_tests.values())
        return cls(tests, max(tests.values(), default=limits.min_test_s),
                   cpu_limit(limits, ref_suite.get("import_s")),
                   cpu_limit(limits, ref_suite.get("gap_s")),
                   round(SUITE_FACTOR * ref_total + limits.min_test_s, 3))

    @classmethod
    def unlimited(cls, limits) -> "TimeLimits":
        """For the reference run, which is measured rather than judged: only cpu_s holds."""
        return cls({}, limits.cpu_s, limits.cpu_s, limits.cpu_s)

    def for_test(self, node: str) -> float:
        if node in self.tests:
            return self.tests[node]
        return self.tests.get(TestId("", node).base, self.default_s)


@dataclass
class PhaseUse:
    cpu_s: float | None            # None: no CPU measurement on this host
    wall_s: float                  # wall clock, less the time spent waiting for a CPU
    waited_s: float                # time spent waiting for a CPU
    # The parent sees a phase start or end only at its next sample, so the phase's true CPU
    # time lies between what was used from the sample after its start to the sample before
    # its end, and from the sample before its start to the one after its end.
    cpu_low: float | None = None
    cpu_high: float | None = None


@dataclass
class Stop:
    """Why the parent ended a run: which phase ("import", "gap" or a test node), on which
    clock ("cpu", "wall", or "budget": the whole run's CPU), what the phase had used, and the
    limit that was passed."""
    phase: str
    kind: str
    used: PhaseUse
    limit_s: float


@dataclass
class _Open:
    name: str | None               # None: boot (before the runner's first line)
    limit_s: float | None
    at: Usage                      # the sample with which its start was seen
    before: Usage                  # the sample before that one


@dataclass
class PhaseClock:
    """Fed the runner's events and the tree's usage; charges each phase and says when to stop.
    Used as the sandbox's monitor through `check` (suite_run.py)."""

    limits: TimeLimits
    tests: dict[str, PhaseUse] = field(default_factory=dict)
    import_use: PhaseUse | None = None
    gap_max: PhaseUse | None = None        # the costliest gap (the reference's sets gap_s)
    stopped: Stop | None = None
    last: Usage = field(default_factory=lambda: _zero_usage())
    _open: _Open = field(init=False)
    _started: Usage | None = None          # the sample that saw the runner's first line

    def __post_init__(self) -> None:
        self._open = _Open(None, None, self.last, self.last)

    def event(self, ev: dict, u: Usage) -> None:
        """One well-formed event from the runner (ChildLog.feed's output), seen at usage `u`
        (a fresh sample; the one before it was passed to `check`)."""
        kind = ev.get("ev")
        if kind == "start":
            if self._started is None:
                self._started = u
            self._switch("import", self.limits.import_s, u)
        elif kind == "test_started":
            node = str(ev.get("test"))
            self._switch(node, self.limits.for_test(node), u)
        elif kind in ("imported", "test_finished", "finished", "compile_error",
                      "import_timeout", "runner_error"):
            # the last ones end the run, but the child writes them: what follows stays limited
            self._switch("gap", self.limits.gap_s, u)

    def check(self, u: Usage) -> str | None:
        """"cpu" or "wall" when the open phase, or the run, is past a limit (and remember why),
        else None."""
        self.last = u
        ph = self._open
        if self.stopped is None and self._over_budget(u):
            self.stopped = Stop(ph.name or "gap", "budget", self._use(ph, u),
                                self.limits.budget_s or 0.0)  # over budget: a budget is set
        cap = self.limits.wall_cap_s
        if self.stopped is None and cap is not None and u.wall_s - u.wait_s > cap:
            self.stopped = Stop(ph.name or "gap", "cap", self._use(ph, u), cap)
        if self.stopped is not None and self.stopped.kind == "cap":
            return "cpu"  # a limit that is not the host's doing: never run again
        if ph.limit_s is None or self.stopped is not None:
            return "cpu" if self.stopped and self.stopped.kind == "budget" else None
        used = self._use(ph, u)
        # no CPU measurement here (no /proc, no cgroup): the phase's wall time stands in
        spent = used.cpu_s if used.cpu_s is not None else used.wall_s
        if spent > ph.limit_s + GRACE_S:
            self.stopped = Stop(ph.name or "gap", "cpu", used, ph.limit_s)
        elif used.cpu_s is not None and used.wall_s > wall_net(ph.limit_s):
            self.stopped = Stop(ph.name or "gap", "wall", used, ph.limit_s)
        return self.stopped.kind if self.stopped else None

    def _over_budget(self, u: Usage) -> bool:
        b, s = self.limits.budget_s, self._started
        return bool(b is not None and s is not None and u.cpu_s is not None
                    and s.cpu_s is not None and u.cpu_s - s.cpu_s > b + GRACE_S)

    @property
    def run_cpu_s(self) -> float | None:
        """The CPU time the budget counts: from the runner's first line to the last sample."""
        s, u = self._started, self.last
        if s is None or s.cpu_s is None or u.cpu_s is None:
            return None
        return max(0.0, u.cpu_s - s.cpu_s)

    def finish(self, u: Usage) -> None:
        """The run is over; `u` is its last usage."""
        self._switch(None, None, u)
        self.last = u

    def over_limit(self, node: str) -> bool:
        """The parent measured more CPU time for this test than its limit allows, whatever
        the runner reported."""
        use = self.tests.get(node)
        return bool(use and use.cpu_s is not None
                    and use.cpu_s > self.limits.for_test(node) + GRACE_S)

    def _switch(self, name: str | None, limit_s: float | None, u: Usage) -> None:
        ph = self._open
        if ph.name is not None:
            used = self._use(ph, u)
            last, at, before, now = self.last.cpu_s, ph.at.cpu_s, ph.before.cpu_s, u.cpu_s
            if used.cpu_s is not None and last is not None and at is not None \
                    and before is not None and now is not None:
                used.cpu_low = max(0.0, last - at)
                used.cpu_high = max(0.0, now - before)
            if ph.name == "import":
                self.import_use = used
            elif ph.name == "gap":
                if self.gap_max is None or _more(used, self.gap_max):
                    self.gap_max = used
            else:
                self.tests[ph.name] = used
        self._open = _Open(name, limit_s, u, self.last)

    @staticmethod
    def _use(ph: _Open, u: Usage) -> PhaseUse:
        waited = max(0.0, u.wait_s - ph.at.wait_s)
        cpu = None if u.cpu_s is None or ph.at.cpu_s is None else max(0.0, u.cpu_s - ph.at.cpu_s)
        return PhaseUse(cpu, max(0.0, u.wall_s - ph.at.wall_s - waited), waited)


@dataclass(frozen=True)
class _NoUsage:
    """A run's usage before it has used anything (the sandbox's Usage has the same fields; the
    page bundles this module without the sandbox)."""
    wall_s: float = 0.0
    cpu_s: float | None = 0.0
    wait_s: float = 0.0


def grading_cap(limits: Mapping[str, TimeLimits]) -> float:
    """The wall clock a whole grading's runs may take, less the time they waited for a CPU:
    their CPU budgets (a run that computes needs at least that) plus WALL_ALLOWANCE_S."""
    return round(sum(t.budget_s or 0.0 for t in limits.values()) + WALL_ALLOWANCE_S, 3)


def slept(stop: Stop | None) -> TypeGuard[Stop]:
    """The wall net stopped a phase that was hardly computing: its own doing, not the
    host's, so running it again would only hold the grader as long once more."""
    return bool(stop is not None and stop.kind == "wall" and stop.used.cpu_s is not None
                and stop.used.cpu_s < SLEPT_FRACTION * stop.used.wall_s)


def _zero_usage() -> Usage:
    return _NoUsage()


def _more(a: PhaseUse, b: PhaseUse) -> bool:
    return (a.cpu_s or 0.0, a.wall_s) > (b.cpu_s or 0.0, b.wall_s)


def shown_cpu_s(child_s, parent: PhaseUse | None) -> float | None:
    """The CPU time to show for a phase: the runner's own figure is finer grained than the
    parent's 50 ms samples, but it is the child's word, so it is kept within the bounds the
    parent's samples put on the phase."""
    if parent is None or parent.cpu_s is None:
        return None
    if not isinstance(child_s, (int, float)) or isinstance(child_s, bool) or child_s != child_s:
        return parent.cpu_s
    low = parent.cpu_low if parent.cpu_low is not None else parent.cpu_s
    high = parent.cpu_high if parent.cpu_high is not None else parent.cpu_s
    return min(max(float(child_s), low), high)
