"""Project-wide test settings.

Some tests skip when the machine lacks what they drive (Chromium, PostgreSQL, Redis, bubblewrap,
a GPU). On a laptop that is a convenience; in CI it would hide a broken install step behind a
green run. With KVPRACTICE_STRICT_SKIPS=1 (set by .ci/run) such a skip fails the run instead;
only tests that need hardware CI never has (CUDA) may still skip.
"""

import os

# Before anything imports torch: the tests' own torch work (tiny models, a few small ops each) runs
# on one OpenMP thread, as the sandboxes' does. With two, each parallel region waits for both
# threads, and beside another busy process one of them keeps losing its core: measured here,
# tests/reference_stack took 61 s instead of 38 s beside a `yes` hog, and 41 s instead of 35 idle.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
import work_units
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


# `make test` shares the suite out to two xdist workers by units of work (tests/work_units.py)
pytest_xdist_make_scheduler = work_units.make_scheduler


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
