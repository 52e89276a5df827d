"""Time limits are CPU time of the sandboxed tree, so a busy host does not change verdicts:
accepted files stay AC with 3 CPU spinners per core beside the judge, an endless loop is still
TLE (stopped by its CPU limit, also when the loop runs in a child process), and a test that
sleeps forever is stopped by the wall-clock safety net, run once more, and reported as such.

Nothing here compares wall-clock durations: only verdicts, which clock stopped a run, and CPU
figures. The small problem `busy` below is CPU-bound on purpose: its tests take a noticeable
share of their limit, so on a loaded host their wall time goes well past it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from paths import REPO

from judge import grade, load_problem
from judge.grading.reference_cache import ReferenceCache, get_reference
from judge.judging.clock import GRACE_S, PhaseClock, PhaseUse, TimeLimits, cpu_limit, shown_cpu_s, wall_net
from judge.sandbox.usage import TreeMeter, Usage

FIXTURES = REPO / "tests" / "fixtures"
LRU = FIXTURES / "problems" / "001-lru-cache"
P143 = REPO / "problems" / "143-tiered-kv-cache"

SPIN = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\n" \
       "while time.monotonic() < end:\n    pass\n"

pytestmark = pytest.mark.usefixtures("sandbox_path")  # cold and warm (tests/sandbox_paths.py)


@contextlib.contextmanager
def cpu_load(per_core: int = 3, lifetime_s: float = 900):
    """`per_core` busy processes per CPU; each ends by itself after `lifetime_s` at the latest
    and is killed on the way out. Three a core leave a judged tree of one busy process 1/3.5 of
    a core: its wall time 3.5 times its CPU time, past the 3x of `busy`'s time_factor that a
    wall-clock limit would allow (four a core made these tests a third slower still)."""
    procs = []
    try:
        for _ in range(per_core * (os.cpu_count() or 1)):
            procs.append(subprocess.Popen([sys.executable, "-c", SPIN, str(lifetime_s)],
                                          stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL))
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


# ---- a small CPU-bound problem ------------------------------------------------------------

REFERENCE = '''
def count_primes(n):
    """Primes below n by trial division: slow on purpose, the tests need CPU time."""
    count = 0
    for k in range(2, n):
        d = 2
        while d * d <= k:
            if k % d == 0:
                break
            d += 1
        else:
            count += 1
    return count
'''

# the same work written differently: an accepted file that costs what the reference costs
ACCEPTED = '''
def count_primes(n):
    found = 0
    k = 2
    while k < n:
        prime, d = True, 2
        while prime and d * d <= k:
            prime = k % d != 0
            d += 1
        found += prime
        k += 1
    return found
'''

TOML = '''id = "902"
slug = "busy"
difficulty = "easy"
requires = []
[title]
en = "Counting primes, slowly"
zh = "慢慢数素数"
[submission]
module = "busy"
[reference]
path = "reference/busy.py"
[limits]
wall_s = 30
cpu_s = 30
memory_mb = 1024
output_kb = 64
time_factor = 3.0
min_test_s = 0.5
'''

PUBLIC = '''from busy import count_primes

def test_example_small(observe):
    observe("primes below 30", count_primes(30))

def test_busy(observe):
    observe("primes below 150000", count_primes(150000))
'''

HIDDEN = '''from busy import count_primes

def test_busy_again(observe):
    observe("primes below 120000", count_primes(120000))
'''


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    root = tmp_path_factory.mktemp("busy")
    folder = root / "problems" / "902-busy"
    for rel, text in {"problem.toml": TOML, "statement.en.md": "# Busy\n",
                      "statement.zh.md": "# Busy\n", "starter/busy.py": "",
                      "tests/public/test_count.py": PUBLIC,
                      "tests/hidden/test_more.py": HIDDEN}.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    (root / "reference").mkdir()
    (root / "reference" / "busy.py").write_text(REFERENCE)
    return load_problem(folder)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return ReferenceCache(tmp_path_factory.mktemp("refcache"))


def graded(problem, cache, source, **kw):
    report = grade(problem, source, cache=cache, **kw)
    return report.to_dict(), report


def by_name(d):
    return {t["name"]: t for t in d["tests"]}


def looping(how: str) -> str:
    """A submission whose count_primes never returns for large n (the examples still pass):
    how it spends its time is `how`."""
    body = {
        "spin": "        while True:\n            pass\n",
        # the CPU is burnt by a child process: the runner's own timer cannot see it
        "child": "        if os.fork() == 0:\n            while True:\n                pass\n"
                 "        os.wait()\n",
        "stubborn": "        while True:\n            try:\n                while True:\n"
                    "                    pass\n            except BaseException:\n"
                    "                pass\n",
        "sleep": "        time.sleep(10_000)\n",
    }[how]
    return (REFERENCE + "\nimport os, time\n_count = count_primes\n"
            "def count_primes(n):\n    if n > 100:\n" + body + "    return _count(n)\n")


# ---- under load ---------------------------------------------------------------------------

def test_accepted_files_stay_ac_beside_cpu_spinners(busy, cache):
    lru = load_problem(LRU)
    files = {"busy reference": (busy, REFERENCE), "busy accepted": (busy, ACCEPTED),
             "lru reference": (lru, (FIXTURES / "reference" / "lru.py").read_text())}
    for f in sorted((LRU / "submissions" / "accepted").glob("*.py")):
        files[f"lru {f.name}"] = (lru, f.read_text())
    for problem in (busy, lru):  # the reference's CPU times, measured on a quiet host
        get_reference(problem, ["public", "hidden"], "cpu", cache=cache)
    with cpu_load():
        results = {label: graded(p, cache, src) for label, (p, src) in files.items()}
    for label, (d, report) in results.items():
        assert d["verdict"] == "AC", (label, d["first_failure"], report.ie_cause)
    # the load was real: the judged trees had to wait for a CPU
    d, _ = results["busy reference"]
    assert d["timings"]["phases"]["public"]["cpu_wait_s"] > 0


@pytest.mark.slow
def test_an_accepted_file_of_problem_143_stays_ac_beside_cpu_spinners(cache):
    pytest.importorskip("torch")
    problem = load_problem(P143)
    accepted = sorted((P143 / "submissions" / "accepted").glob("*.py"))[0]
    # the reference's CPU times, measured on a quiet host (its own AC is test_bank's proof)
    get_reference(problem, ["public", "hidden"], "cpu", cache=cache)
    with cpu_load():
        d, report = graded(problem, cache, accepted.read_text(), device="cpu")
    assert d["verdict"] == "AC", (accepted.name, d["first_failure"], report.ie_cause)
    assert all(ph["runs"] == 1 for ph in d["timings"]["phases"].values())


@pytest.mark.parametrize("how", ["spin", "child", "stubborn"])
def test_an_endless_loop_is_tle_by_its_cpu_limit_even_under_load(busy, cache, how):
    with cpu_load():
        d, _ = graded(busy, cache, looping(how), suite="public")
    t = by_name(d)["public/test_count.py::test_busy"]
    assert d["verdict"] == "TLE" and t["verdict"] == "TLE", d["tests"]
    assert "CPU time" in t["failure"]["message"] and "wall" not in t["failure"]["message"]
    # stopped on its CPU limit, on the first run, not by the wall-clock net
    assert d["timings"]["phases"]["public"]["runs"] == 1
    suite, ref_tests = _ref(cache, busy)
    limit = TimeLimits.from_reference(busy.limits, suite, ref_tests).for_test(
        "test_count.py::test_busy")
    assert limit == cpu_limit(busy.limits, ref_tests["public/test_count.py::test_busy"]["time_s"])
    # (the runner's timer and its own figure count in scheduler ticks: a little slack below)
    assert limit - 0.1 <= t["time_s"] <= limit + GRACE_S + 0.5
    # the example before it still passed
    assert by_name(d)["public/test_count.py::test_example_small"]["verdict"] == "AC"


def _ref(cache, problem):
    suite = get_reference(problem, ["public"], "cpu", cache=cache)[0]["public"]
    return suite, {t["name"]: t for t in suite["tests"]}


@pytest.mark.parametrize("where", ["test", "import"])
def test_sleeping_forever_is_stopped_by_the_wall_net_once_and_says_so(busy, cache, where):
    """A run the net stops while it sleeps is not run again (issue 20, item 2): a busy host
    would have left it computing, so a second run would only hold the grader as long again."""
    source = looping("sleep") if where == "test" else \
        REFERENCE + "\nimport time\ntime.sleep(10_000)\n"
    d, _ = graded(busy, cache, source, suite="public")
    victim = "test_busy" if where == "test" else "test_example_small"
    t = by_name(d)[f"public/test_count.py::{victim}"]
    assert d["verdict"] == "TLE" and t["verdict"] == "TLE"
    msg = t["failure"]["message"]
    assert "wall-clock safety net" in msg and "its run" in msg and "waiting" in msg, msg
    assert "not run again" in msg
    assert ("importing your module" in msg) == (where == "import")
    assert d["timings"]["phases"]["public"]["runs"] == 1
    if where == "test":
        assert t["time_s"] < 0.5  # it used (almost) no CPU time
        assert by_name(d)["public/test_count.py::test_example_small"]["verdict"] == "AC"
    else:
        assert by_name(d)["public/test_count.py::test_busy"]["verdict"] == "NR"


# ---- the parent's clock, on its own -------------------------------------------------------

LIMITS = TimeLimits({"t.py::a": 2.0}, default_s=2.0, import_s=1.0, gap_s=1.0)


def _clock_in_test(*events):
    clock = PhaseClock(LIMITS)
    for ev, u in events:
        clock.event(ev, u)
        clock.check(u)
    return clock


def test_a_starved_test_is_not_stopped_but_a_sleeping_one_is():
    start = [({"ev": "start"}, Usage(0.1, 0.1)), ({"ev": "imported"}, Usage(0.2, 0.2)),
             ({"ev": "test_started", "test": "t.py::a"}, Usage(0.3, 0.3))]
    clock = _clock_in_test(*start)
    # 60 s of wall clock, 59 of them waiting for a CPU, 1 s of CPU: fine
    assert clock.check(Usage(60.3, 1.3, 59.0)) is None
    clock = _clock_in_test(*start)
    net = wall_net(2.0)                                   # a few times the 2 s limit
    assert net >= 3 * (2.0 + GRACE_S)
    assert clock.check(Usage(0.3 + net - 0.1, 0.31, 0.0)) is None
    assert clock.check(Usage(0.3 + net + 0.1, 0.31, 0.0)) == "wall"
    assert clock.stopped.phase == "t.py::a" and clock.stopped.kind == "wall"
    clock = _clock_in_test(*start)
    assert clock.check(Usage(4.0, 0.3 + 2.0 + GRACE_S + 0.01, 0.0)) == "cpu"


def test_the_childs_events_only_move_phase_boundaries():
    clock = _clock_in_test(({"ev": "start"}, Usage(0.1, 0.1)),
                           ({"ev": "imported"}, Usage(0.2, 0.2)),
                           ({"ev": "test_started", "test": "t.py::a"}, Usage(0.3, 0.3)),
                           ({"ev": "test_finished", "test": "t.py::a"}, Usage(1.3, 1.3)))
    assert clock.tests["t.py::a"].cpu_s == pytest.approx(1.0)
    # a forged "finished" does not end the limits: what follows is a limited gap
    clock.event({"ev": "finished"}, Usage(1.4, 1.4))
    assert clock.check(Usage(5.0, 1.4 + 1.0 + GRACE_S + 0.1)) == "cpu"
    assert clock.stopped.phase == "gap"


def test_the_childs_cpu_figure_is_kept_within_the_parents_bounds():
    use = PhaseUse(cpu_s=1.0, wall_s=1.0, waited_s=0.0, cpu_low=0.9, cpu_high=1.1)
    assert shown_cpu_s(0.95, use) == 0.95
    assert shown_cpu_s(0.0, use) == 0.9      # claims to have been quicker than it was
    assert shown_cpu_s(50.0, use) == 1.1
    assert shown_cpu_s(None, use) == 1.0
    assert shown_cpu_s(0.5, None) is None


def test_the_meter_counts_the_whole_tree_without_a_cgroup_too():
    # a grandchild burns 0.6 s of CPU time while its parent, the process we hold, sleeps; it
    # stays alive after that, so the meter's last sample is not the one before it exited. It burns
    # more than the 0.5 s asserted: /proc counts in clock ticks, process_time() does not, and a
    # fresh clone's CI saw /proc stop at 0.49 s after exactly 0.5 s of process_time()
    code = ("import os, time\nif os.fork() == 0:\n    t = time.process_time()\n"
            "    while time.process_time() - t < 0.6:\n        pass\n    time.sleep(600)\n"
            "time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        meter = TreeMeter(proc.pid)   # no cgroup: /proc
        for _ in range(1200):         # up to a minute on a very busy host
            u = meter.sample()
            if u.cpu_s >= 0.5:
                break
            time.sleep(0.05)
        assert u.cpu_s >= 0.5 and u.wait_s >= 0.0
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the grandchild too
        proc.wait()


def test_reference_times_are_cpu_times_in_a_new_cache_schema(busy, cache, tmp_path):
    suite, tests = _ref(cache, busy)
    assert tests["public/test_count.py::test_busy"]["time_s"] > 0
    assert suite["import_s"] >= 0 and suite["gap_s"] >= 0
    stale = ReferenceCache(tmp_path)
    path = stale.path(busy, "cpu")
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(cache.path(busy, "cpu").read_text())
    path.write_text(json.dumps(dict(data, schema=1)))  # a wall-clock era file
    assert stale.load(busy, "cpu") == {}
