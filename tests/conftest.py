"""Project-wide test settings.

Some tests skip when the machine lacks what they drive (Chromium, PostgreSQL, Redis, bubblewrap,
a GPU). On a laptop that is a convenience; in CI it would hide a broken install step behind a
green run. With KVPRACTICE_STRICT_SKIPS=1 (set by .ci/run) such a skip fails the run instead;
only tests that need hardware CI never has (CUDA) may still skip.
"""

import os
from collections import OrderedDict

# Before anything imports torch: the tests' own torch work (tiny models, a few small ops each) runs
# on one OpenMP thread, as the sandboxes' does. With two, each parallel region waits for both
# threads, and beside another busy process one of them keeps losing its core: measured here,
# tests/reference_stack took 61 s instead of 38 s beside a `yes` hog, and 41 s instead of 35 idle.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
from paths import REPO
from sandbox_paths import sandbox_path  # noqa: F401  (a fixture: cold and warm sandbox runs)

from judge import load_problem
from judge.grading.reference_cache import ReferenceCache

ALLOWED_IN_STRICT = ("CUDA", "cuda")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    # an expected failure (xfail) is reported as skipped too: it is a verdict, not a skip
    if os.environ.get("KVPRACTICE_STRICT_SKIPS") != "1" or not report.skipped or \
            hasattr(report, "wasxfail"):
        return
    reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if not any(word in reason for word in ALLOWED_IN_STRICT):
        report.outcome = "failed"
        report.longrepr = f"skipped in strict mode (KVPRACTICE_STRICT_SKIPS=1): {reason}"


# `make test` runs the suite on two xdist workers (pytest -n 2), a unit of work being one test
# module, except where tests share what is made once per process: tests/e2e's one server and
# Chromium (package-scope fixtures), and the known gradings (tests/known_gradings.py: the bank's
# proof reads the gradings the warm, shard and 143 tests make). xdist's own `--dist loadgroup`
# cannot say so under pytest 9.2 (it renames `item._nodeid`, which pytest 9.2 no longer reads:
# every test became its own group), hence a scheduler of our own.
SHARED_UNITS = {
    "tests/e2e/": "tests/e2e",
    "tests/authoring/test_bank_proves_itself.py": "known_gradings",
    "tests/grading/test_warm_same_verdicts.py": "known_gradings",
    "tests/grading/test_problem143_grading.py": "known_gradings",
    "tests/grading/test_hidden_shards.py": "known_gradings",
}


# The longest units go out first, so that the two workers end together (xdist's own order is by
# number of tests, which put the known gradings, 4 modules of few and long tests, near the end).
# Wall seconds of a serial run beside a CPU hog (2-core box); only the order is taken from them.
LONGEST_FIRST = (
    "tests/e2e",                                     # 339 s
    "known_gradings",                                # 231
    "tests/grading/test_imported_warm.py",           # 84
    "tests/grading/test_cpu_time_limits.py",         # 78
    "tests/project/test_benchmarks.py",              # 76
    "tests/grading/test_imported_shared.py",         # 76
    "tests/grading/test_grade_end_to_end.py",        # 75
    "tests/web_platform/test_distributed_burst.py",  # 71
    "tests/grading/test_cpp_grading.py",             # 56
    "tests/project/test_offline_setup.py",           # 55
    "tests/web_platform/test_distributed_flow.py",   # 54
    "tests/web_platform/test_distributed_faults.py", # 49
    "tests/grading/test_imported_grading.py",        # 46
    "tests/runner/test_proxy_capabilities.py",       # 45
)


def unit_of(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    for prefix, unit in SHARED_UNITS.items():
        if module.startswith(prefix):
            return unit
    return module


class _LongestFirst(OrderedDict):
    """xdist's queue of units, giving out the earliest of LONGEST_FIRST before the others (in
    xdist's order); popitem(last=False) is the only way xdist takes a unit from it."""

    def popitem(self, last: bool = True):
        if last or not self:
            return super().popitem(last)
        rank = {unit: i for i, unit in enumerate(LONGEST_FIRST)}
        unit = min(self, key=lambda u: rank.get(u, len(rank)))
        return unit, self.pop(unit)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class SharedUnitScheduling(LoadScopeScheduling):
        def __init__(self, config, log=None):
            super().__init__(config, log)
            self.workqueue = _LongestFirst()

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return SharedUnitScheduling(config, log)


# grade() end to end on the fixture problem 001 (an LRU cache, pure Python): the problem and a
# reference cache, one of each per module (tests/grading/test_grade_end_to_end.py and the files of
# grading/, judging/ and sandbox/ that grade it too)


@pytest.fixture(scope="module")
def problem():
    return load_problem(REPO / "tests" / "fixtures" / "problems" / "001-lru-cache")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return ReferenceCache(tmp_path_factory.mktemp("refcache"))


# The cache of references' outputs and built tools (KVPRACTICE_CACHE): a module whose gradings
# must not read the repository's .cache, nor leave anything in it, opts in with
# `pytestmark = pytest.mark.usefixtures("run_cache")` (one folder for the whole run, so each
# reference is run once) or "fresh_cache" (one per test: the reference's run is under test).


@pytest.fixture
def run_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("KVPRACTICE_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture
def fresh_cache(tmp_path, tmp_path_factory, monkeypatch):
    monkeypatch.setenv("KVPRACTICE_CACHE", str(tmp_path / "cache"))
    # the C++ harness's compiled functions (judge/grading/cpp/build.py runtime_object) are
    # the judge's own code, no reference's run: one compile of them for the whole run
    shared = tmp_path_factory.getbasetemp() / "cache" / "cpp-builds" / "rt"
    shared.mkdir(parents=True, exist_ok=True)
    (tmp_path / "cache" / "cpp-builds").mkdir(parents=True)
    (tmp_path / "cache" / "cpp-builds" / "rt").symlink_to(shared, target_is_directory=True)


# Throwaway PostgreSQL / Redis / platform server on loopback, for the distributed tests. Imported
# lazily: the other tests never need distributed_support.


@pytest.fixture
def pg_url():
    from distributed_support import postgres
    return postgres().new_database()


@pytest.fixture
def redis_srv():
    from distributed_support import RedisServer
    r = RedisServer()
    yield r
    r.stop()


@pytest.fixture
def server(tmp_path, pg_url, redis_srv):
    from distributed_support import Server
    s = Server(tmp_path, pg_url, redis_srv.url())
    yield s
    s.kill()
