"""Where one grade() spends its time, on the cold or the warm path: the grading's own steps
(reference observations, the grading folder, each suite run, judging and the report) and, inside
each suite run, the sandbox's (the zygote lookup, slot uid, grants, cgroup, the fork answering,
the run itself, its status, the clean-up). Timed in this process by wrapping those functions;
the steps overlap nowhere (one grading at a time), so the rest of a suite run is the plumbing
between them.

    .venv/bin/python benchmarks/grading_profile.py [PROBLEM] [--repeat N] [--path warm|cold]
        [--file accepted/NAME.py] [--quick]

Also `grading_latency.py --parts profile`. Prints a table; no asserts; its figures depend on
the machine's load (printed with them).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

STEPS = ["zygote lookup", "slot uid", "grants + reachable", "cgroup create", "fork answers",
         "cgroup add", "the run (watch)", "status", "clean-up"]

# the public run's phases as its report gives them (the hidden run's are logged only)
PHASES = ["public: to the runner's start (fork, mounts, uid)", "public: the submission's import",
          "public: pytest and the tests"]


class _Clock:
    def __init__(self):
        self.lock = threading.Lock()
        self.t: dict[str, float] = defaultdict(float)

    def add(self, name: str, dt: float) -> None:
        with self.lock:
            self.t[name] += dt

    def wrap(self, owner, attr: str, name, undo: list, *, static=False):
        orig = getattr(owner, attr)
        clock = self

        def timed(*a, **kw):
            t = time.perf_counter()
            try:
                return orig(*a, **kw)
            finally:
                clock.add(name(a, kw) if callable(name) else name, time.perf_counter() - t)
        undo.append((owner, attr, owner.__dict__.get(attr, None) if isinstance(owner, type)
                     else orig))
        setattr(owner, attr, staticmethod(timed) if static else timed)

    def wrap_cm(self, owner, attr: str, name: str, undo: list):
        """A context manager: the time of its enter and exit, not of its body."""
        orig = getattr(owner, attr)
        clock = self

        @contextlib.contextmanager
        def timed(*a, **kw):
            t = time.perf_counter()
            cm = orig(*a, **kw)
            value = cm.__enter__()
            clock.add(name, time.perf_counter() - t)
            try:
                yield value
            except BaseException:
                t = time.perf_counter()
                if not cm.__exit__(*sys.exc_info()):
                    clock.add(name, time.perf_counter() - t)
                    raise
                clock.add(name, time.perf_counter() - t)
            else:
                t = time.perf_counter()
                cm.__exit__(None, None, None)
                clock.add(name, time.perf_counter() - t)
        undo.append((owner, attr, orig))
        setattr(owner, attr, timed)


@contextlib.contextmanager
def instrumented(clock: _Clock):
    import socket

    from judge.grading import grader, warm_pool
    from judge.sandbox import accounts, cgroups, forkserver, grants

    undo: list = []
    clock.wrap(grader, "get_reference", "reference observations", undo)
    clock.wrap(grader, "run_suite", lambda a, kw: f"{kw.get('suite')} suite run", undo)
    clock.wrap(warm_pool, "spawner", "zygote lookup", undo)
    clock.wrap_cm(accounts, "acquire", "slot uid", undo)
    clock.wrap_cm(grants, "grant", "grants + reachable", undo)
    clock.wrap(forkserver, "check_reachable", "grants + reachable", undo)
    clock.wrap(cgroups.RunGroup, "create", "cgroup create", undo, static=True)
    clock.wrap(cgroups.RunGroup, "add", "cgroup add", undo)
    clock.wrap(forkserver, "watch", "the run (watch)", undo)
    clock.wrap(forkserver, "_status", "status", undo)
    clock.wrap(forkserver, "cleanup", "clean-up", undo)
    # the fork server's one recvmsg per run: from the request to the fork's "ready"
    clock.wrap(socket.socket, "recvmsg", "fork answers", undo)
    try:
        yield
    finally:
        for owner, attr, orig in reversed(undo):
            if orig is None:  # inherited (socket.recvmsg): the base's again
                delattr(owner, attr)
            else:  # for a class, its own descriptor (a classmethod stays one)
                setattr(owner, attr, orig)


def profile(problem, source: str, path: str, repeat: int) -> dict:
    """{step: median seconds per grading} over `repeat` gradings after one not counted."""
    from judge import grade
    from judge.grading import warm_pool
    from judge.grading.reference_cache import ReferenceCache

    cache = ReferenceCache(in_memory=True)
    per: list[dict] = []
    verdicts = []
    with warm_pool.forced(path == "warm"):
        grade(problem, source, device="cpu", cache=cache)  # the reference, the zygote
        for _ in range(repeat):
            clock = _Clock()
            with instrumented(clock):
                t = time.perf_counter()
                r = grade(problem, source, device="cpu", cache=cache)
                total = time.perf_counter() - t
            d = dict(clock.t)
            d["grading folder"] = float(r.timings.get("prepare_s") or 0.0)
            runs = sum(v for k, v in d.items() if k.endswith("suite run"))
            d["judging + report (the rest)"] = total - runs - d["grading folder"] - d.get(
                "reference observations", 0.0)
            d["grade() total"] = total
            ph = (r.timings.get("phases") or {}).get("public") or {}
            for k, label in (("start_s", "public: to the runner's start (fork, mounts, uid)"),
                             ("import_s", "public: the submission's import"),
                             ("tests_s", "public: pytest and the tests")):
                if ph.get(k) is not None:
                    d[label] = float(ph[k])
            per.append(d)
            verdicts.append(str(r.verdict))
    warm_pool.close_all()
    keys = sorted({k for d in per for k in d})
    return {"medians": {k: statistics.median(d.get(k, 0.0) for d in per) for k in keys},
            "verdicts": verdicts}


def print_profile(name: str, path: str, out: dict) -> None:
    from grading_latency import print_table

    m = out["medians"]
    order = ["reference observations", "grading folder", "public suite run", *PHASES,
             "hidden suite run", *STEPS, "judging + report (the rest)", "grade() total"]
    rows = []
    for k in order:
        if k in m:
            inside = k in STEPS or k in PHASES
            rows.append([("    " if inside else "") + k, f"{m[k]:.3f}"])
    print(f"\nwhere one grade() of {name} goes, {path} path (median per grading; the indented "
          "steps: the sandbox's, summed over both suite runs; the public run's phases): verdicts "
          + ", ".join(out["verdicts"]))
    print_table(["step", "seconds"], rows)


def main() -> None:
    from judge import load_problem

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("problem", nargs="?", default="143")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--path", default="warm", choices=["warm", "cold"])
    ap.add_argument("--file", default=None, help="a submission, e.g. accepted/x.py (default: "
                    "the reference)")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.repeat = 1
    print(f"machine: {os.cpu_count()} CPUs, load average "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    problem = load_problem(args.problem)
    src = ((problem.path / "submissions" / args.file) if args.file
           else problem.reference_path).read_text()
    print_profile(problem.name, args.path, profile(problem, src, args.path, args.repeat))


if __name__ == "__main__":
    main()
