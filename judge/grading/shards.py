"""The hidden suite of one grading as N shards at once, one sandboxed run each, so that a
verdict uses every core its worker owns (issue 19; docs/SANDBOX.md section 7).

    run = run_hidden(problem, view, run=..., suite=..., submission=..., targets=...,
                     limits=..., device=..., ref_tests=..., on_events=...)

Each shard is a suite run exactly as today (suite_run.run_suite: a warm fork or a cold sandbox,
its own scratch filesystem, uid, cgroup, rlimits, seccomp, no network, results pipe) over a
subset of the suite's test files, the subsets balanced by the reference's per-test CPU times
(measured in the reference's own run: trusted), else by file count.

The verdict must be the one an unsharded run gives, so a sharded result is used only where the
shards tell the judge nothing an unsharded run would have told it differently: every shard
ended normally (status 0, no limit, no signal, no stop by the parent's clock, no import or
collection error, no runner error, no forged or oversized line, the runner's `finished` line
seen) and together they stayed within what one run may use (the suite's CPU budget and
cpu_s counted over all shards, memory peaks and output summed). Then the shards' records are
merged into one, in the suite's canonical order (the reference's), and judged as one run: each
test's result depends only on its own record, its reference entry and its limits, which are
the same. In every other case (a TLE, MLE, RE or crash in any shard, or the sum over a limit)
the shards' results are all dropped and the suite is run once more unsharded, exactly as
today, and that run alone is judged: the charge, which tests are NR and the first failure are
then by construction what today's run gives. A failing-abnormal submission pays for both; an
accepted or WA one (the common case) only for the shards.

Not sharded: `stop_at_first_failure` (`judge check --mutate`: it stops at the first failure
anyway), imported (proxied) problems (their tests run in a trusted process of their own,
grading/proxied.py), CUDA runs (one GPU shared by N shards would change what MLE means), the
public suite (it must end before the hidden one starts, and it is short), and a selection of
node ids.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
from dataclasses import replace
from typing import Callable

from judge.config import settings
from judge.grading.suite_run import run_suite
from judge.judging.child_log import ChildLog
from judge.judging.clock import GRACE_S, PhaseClock
from judge.judging.run_record import RunRecord
from judge.judging.test_id import TestId
from judge.judging.test_verdict import _no_space

log = logging.getLogger("judge")

_slots = [1]
stats = {"merged": 0, "unsharded": 0}  # how many hidden runs were merged or run again (tests)


def set_slots(n: int) -> None:
    """This process grades `n` submissions at once (its grading threads): each grading's
    hidden suite gets the cores left to one slot."""
    _slots[0] = max(1, int(n))


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def shard_count(problem, device: str, files: int, *, fail_fast: bool) -> int:
    """How many shards this grading's hidden suite runs as (1: unsharded, today's path)."""
    from judge.grading import proxied, warm_pool

    if fail_fast or device != "cpu" or files < 2 or proxied.is_proxied(problem):
        return 1
    per_slot = max(1, cores() // _slots[0])
    wanted = settings().shards
    if wanted is None:  # auto: only where forks are cheap (a cold shard costs a torch import)
        wanted = per_slot if warm_pool.enabled() else 1
    return max(1, min(wanted, per_slot, files))


def split(files: list[str], ref_tests: dict, n: int) -> list[list[str]]:
    """`files` in n groups of about equal reference CPU time (longest first onto the lightest
    group), each group in the suite's order; by file count where no time is known."""
    cost = {f: 0.0 for f in files}
    for name, entry in ref_tests.items():
        f = TestId.parse(name).node.split("::", 1)[0]
        if f in cost:
            cost[f] += float(entry.get("time_s") or 0.0)
    if not any(cost.values()):
        cost = {f: 1.0 for f in files}
    groups: list[list[str]] = [[] for _ in range(n)]
    load = [0.0] * n
    for f in sorted(files, key=lambda f: (-cost[f], files.index(f))):
        i = min(range(n), key=lambda k: (load[k], len(groups[k]), k))
        groups[i].append(f)
        load[i] += cost[f]
    order = {f: i for i, f in enumerate(files)}
    return [sorted(g, key=order.__getitem__) for g in groups if g]


def run_hidden(problem, view, *, run: str, suite: str, submission, targets: list[str],
               limits, device: str, ref_tests: dict, fail_fast: bool = False,
               on_events: Callable | None = None, stop: threading.Event | None = None,
               runner: Callable[..., RunRecord] = run_suite) -> RunRecord:
    """The suite's run record: merged from N shards where they allow it, else one run.
    `runner`: suite_run.run_suite, or what a test put in its place."""
    files = [t for t in targets if "::" not in t]
    n = shard_count(problem, device, len(files), fail_fast=fail_fast)
    if n < 2 or len(files) != len(targets):
        return runner(problem, view, run=run, suite=suite, submission=submission,
                      targets=targets, limits=limits, device=device, on_events=on_events,
                      stop=stop)
    groups = split(files, ref_tests, n)

    def shard(i: int, on_shard_events: Callable, abandon: threading.Event) -> RunRecord:
        return runner(problem, view, run=f"{run}-shard{i}", suite=suite,
                      submission=submission, targets=groups[i], limits=limits,
                      device=device, on_events=on_shard_events, stop=abandon,
                      share=len(groups))

    done = _run_shards(len(groups), shard, limits, on_events)
    why = None if len(done) == len(groups) else "a shard did not return"
    why = why or next((w for w in map(_abnormal, done) if w), None) or _foreign(
        groups, done) or _over(problem, limits, done)
    if why is None:
        merged = merge(suite, done, limits, ref_tests)
        merged.shards = len(done)
        stats["merged"] += 1
        return merged
    log.info("%s %s: %d shards not used (%s): the suite runs again unsharded", problem.name,
             run, len(groups), why)
    spent = max(r.wall_s - (r.wait_s or 0.0) for r in done) if done else 0.0
    if limits.wall_cap_s is not None:  # the run again draws on the same grading's clock
        limits = replace(limits, wall_cap_s=max(1.0, limits.wall_cap_s - spent))
    again = runner(problem, view, run=f"{run}-unsharded", suite=suite,
                   submission=submission, targets=targets, limits=limits, device=device,
                   on_events=on_events, stop=stop)
    again.shards = -len(groups)
    stats["unsharded"] += 1
    return again


def _run_shards(n: int, shard: Callable[[int, Callable, threading.Event], RunRecord], limits,
                on_events: Callable | None) -> list[RunRecord]:
    """The records of the ``n`` shards that returned, each run on a thread of its own; the
    first abnormal one, or all of them together over the budget, stops the rest."""
    records: list[RunRecord | None] = [None] * n
    live: dict[int, RunRecord] = {}
    abandon = threading.Event()  # the shards cannot be used: stop them all, run once more
    lock = threading.Lock()

    def hook(i: int):
        def seen(events: list[dict], rec: RunRecord) -> None:
            live[i] = rec
            if on_events is not None:  # the judge's live hook, one shard at a time
                with lock:
                    on_events(events, rec)
        return seen

    def one(i: int) -> None:
        try:
            records[i] = shard(i, hook(i), abandon)
        finally:
            r = records[i]
            if r is None or _abnormal(r):
                abandon.set()

    # each shard in a copy of this context: warm_pool.forced and the like hold there too
    threads = [threading.Thread(target=contextvars.copy_context().run, args=(one, i),
                                name=f"judge-shard{i}", daemon=True)
               for i in range(n)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        threads[0].join(0.05)
        if not abandon.is_set() and _over_budget(limits, list(live.values())):
            abandon.set()
    for t in threads:
        t.join()
    return [r for r in records if r is not None]


def _abnormal(r: RunRecord) -> str | None:
    """Why this shard's record could tell the judge something one run would not (None: it
    ended as a run ends that ran each of its tests)."""
    lg = r.log
    if not r.ended or r.died or r.sandbox_error or r.stopped_early:
        return "it ended abnormally"
    if r.clock is not None and r.clock.stopped is not None:
        return "the parent's clock stopped it"
    if lg.runner_error or lg.compile_error or lg.import_timeout or lg.collect_errors:
        return "an import, collection or runner error"
    if lg.finished is None or lg.running is not None or lg.collected is None:
        return "no end of run"
    if lg.tampered or any(rec.oversized for rec in lg.tests.values()):
        return "a line out of order or too big"
    if any(_no_space(rec.finished or {}) for rec in lg.tests.values()):
        # its part of one run's disk (run_suite's share) was full: one run might not be
        return "a test found its part of the disk full"
    return None


def _foreign(groups: list[list[str]], done: list[RunRecord]) -> str | None:
    """A shard that collected or ran a test of a file it was not given: its submission changed
    what its runner runs (the targets are in its own process), and its record of that test
    would stand beside, or over, the record of the shard that owns it."""
    for files, r in zip(groups, done):
        own = set(files)
        nodes = [*(r.log.collected or []), *r.log.tests, *r.log.order]
        if any(n.split("::", 1)[0] not in own for n in nodes):
            return "a shard ran tests of another shard's files"
    return None


def _over_budget(limits, running: list[RunRecord]) -> bool:
    """The shards' CPU time so far already passes what one run's budget allows."""
    used = [r.clock.run_cpu_s for r in running if r.clock is not None]
    return limits.budget_s is not None and sum(u or 0.0 for u in used) > \
        limits.budget_s + GRACE_S


def _over(problem, limits, done: list[RunRecord]) -> str | None:
    """Whether one run doing what the shards did together would have passed a limit."""
    lim = problem.limits
    cpu = _total([r.cpu_s for r in done])
    if cpu is not None and cpu > lim.cpu_s:
        return "their CPU time together passes cpu_s"
    used = _total([r.clock.run_cpu_s if r.clock is not None else None for r in done])
    if limits.budget_s is not None and used is not None and used > limits.budget_s + GRACE_S:
        return "their CPU time together passes the suite's budget"
    peak = _total([r.max_memory_bytes for r in done])
    if peak is not None and peak > lim.memory_mb * 1024 * 1024:
        return "their memory peaks together pass memory_mb"
    if sum(len(r.stdout) + len(r.stderr) for r in done) > lim.output_kb * 1024:
        return "their output together passes output_kb"
    return None


def merge(suite: str, done: list[RunRecord], limits, ref_tests: dict) -> RunRecord:
    """One run's record of the shards' normal runs: each test's own record and its measured
    CPU time as its shard saw them, in the suite's canonical order."""
    order = [TestId.parse(n).node for n in ref_tests]
    rank = {node: i for i, node in enumerate(order)}

    def key(node: str):
        return (rank.get(node, len(rank)), node)

    first = done[0]
    lg = ChildLog(started_t=min(r.log.started_t for r in done if r.log.started_t is not None)
                  if any(r.log.started_t is not None for r in done) else None,
                  import_s=first.log.import_s, import_cpu_s=first.log.import_cpu_s,
                  imported_t=first.log.imported_t)
    lg.collected = sorted({n for r in done for n in (r.log.collected or [])}, key=key)
    tests = {n: rec for r in done for n, rec in r.log.tests.items()}
    lg.tests = {n: tests[n] for n in sorted(tests, key=key)}
    lg.order = sorted({n for r in done for n in r.log.order}, key=key)
    lg.n_observations = sum(r.log.n_observations for r in done)
    lg.n_trace_steps = sum(r.log.n_trace_steps for r in done)
    lg.kept_bytes = sum(r.log.kept_bytes for r in done)
    lg.kept_values = sum(r.log.kept_values for r in done)
    ends = [r.log.finished or {} for r in done]  # each shard's: _abnormal checked it is there
    lg.finished = dict(ends[0])
    lg.finished["tests_s"] = max((e.get("tests_s") or 0.0) for e in ends)
    clock = PhaseClock(limits)
    for r in done:
        if r.clock is None:
            continue
        clock.tests.update(r.clock.tests)
        if clock.import_use is None:
            clock.import_use = r.clock.import_use
        g = r.clock.gap_max
        if g is not None and (clock.gap_max is None or (g.cpu_s or 0.0, g.wall_s) > (
                clock.gap_max.cpu_s or 0.0, clock.gap_max.wall_s)):
            clock.gap_max = g
    spawn = min(r.spawn_t for r in done)
    out = RunRecord(suite=suite, log=lg, spawn_t=spawn, clock=clock, ended=True, returncode=0,
                    wall_s=max(r.spawn_t + r.wall_s for r in done) - spawn,
                    stdout=b"".join(r.stdout for r in done),
                    stderr=b"".join(r.stderr for r in done),
                    layers=dict(first.layers), missing_layers=list(first.missing_layers),
                    attempts=max(r.attempts for r in done))
    out.cpu_s = _total([r.cpu_s for r in done])
    out.wait_s = max((r.wait_s or 0.0) for r in done)
    peak = _total([r.max_memory_bytes for r in done])
    out.max_memory_bytes = int(peak) if peak is not None else None
    return out


def _total(values: list) -> float | None:
    """The sum, or None where one of them is not known."""
    return None if any(v is None for v in values) else float(sum(values))
