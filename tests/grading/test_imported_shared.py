"""Imported problems whose tests share more with the submission than calls (docs/IMPORTED_GRADING.md):
the tests' threads calling one object of the submission at once (rpc/streams.py). Fixtures in
tests/fixtures/handbook_shared are problems written for these tests in the handbook's format."""

from __future__ import annotations

from pathlib import Path

import pytest
from imported_bank import imported_bank
from lowered_floor import floor_lowered

from judge import check_problem, grade

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_shared" / "book"
# cold and as forks of the warm zygote: the shared folder and the served modules on both
# (tests/sandbox_paths.py)
pytestmark = pytest.mark.usefixtures("run_cache", "sandbox_path")


@pytest.fixture(scope="module")
def bank(tmp_path_factory) -> dict:
    return imported_bank(tmp_path_factory, FIXTURES, "shared", runtime=FIXTURES.parent / "runtime")


def source(name: str, file: str = "solution.py") -> str:
    return (FIXTURES / name / file).read_text(encoding="utf-8")


def verdicts(r) -> dict:
    return {t.name.split("::")[1]: str(t.verdict) for t in r.tests}


def known(reports: dict):
    """check_problem's `graded`: {source: the test's grading of it, on this path}. A file of
    the problem with that very text (its reference, its starter) is not graded again by the
    check; its reference runs are the check's own."""
    return lambda problem, path: reports.get(path.read_text(encoding="utf-8"))


# ---- the tests' threads ----------------------------------------------------------------------

def test_threads_of_the_tests_are_served_at_once(bank):
    p = bank["mailbox"]
    assert not p.config.browser  # `requires: [local]`: graded on the server only
    r = grade(p, source("mailbox"))
    res = check_problem(p, graded=known({source("mailbox"): r}))
    assert res.errors == [], res.errors
    assert str(r.verdict) == "AC", [(t.name, str(t.verdict), t.failure) for t in r.tests]
    v = verdicts(r)
    assert set(v) >= {"test_recv_waits_for_another_thread", "test_callbacks_come_back_to_their_thread",
                      "test_producers_and_consumers", "test_close_wakes_a_waiting_recv"}


def test_a_mailbox_that_does_not_wait_is_not_accepted(bank):
    p = bank["mailbox"]
    eager = source("mailbox").replace(
        "            self.cond.wait(left)\n",
        "            raise TimeoutError('empty')\n")
    v = verdicts(grade(p, eager))
    assert v["test_example_order"] == "AC"
    assert v["test_recv_waits_for_another_thread"] != "AC"
    assert v["test_send_blocks_until_a_recv"] != "AC"


def test_a_callback_run_on_another_thread_is_seen_there(bank):
    # the submission calls the test's callback from a thread of its own: in one process the
    # test sees the pool's thread, not its own (WA); here that request goes on the first
    # channel, answered only while the tests' main thread waits on the submission, which it
    # does not (it joins its threads): the callback never runs, also not AC. The test hangs
    # until the wall net, which grows with the per-test floor: a 1 s floor, not the 3 s of
    # the problem, ends it sooner and decides the same
    p = floor_lowered(bank["mailbox"], 1.0)
    other = source("mailbox").replace(
        "def call_with(fn, x):\n    return fn(x)\n",
        "def call_with(fn, x):\n    import concurrent.futures as cf\n"
        "    with cf.ThreadPoolExecutor(1) as ex:\n        return ex.submit(fn, x).result()\n")
    v = verdicts(grade(p, other, suite="hidden"))
    assert v["test_callbacks_come_back_to_their_thread"] != "AC"


# ---- one temporary folder for both processes ---------------------------------------------------

def test_a_file_in_the_tests_temporary_folder_is_the_submissions(bank):
    p = bank["save-file"]
    r = grade(p, source("save-file"))
    res = check_problem(p, graded=known({source("save-file"): r}))
    assert res.errors == [], res.errors
    assert str(r.verdict) == "AC", [(t.name, str(t.verdict), t.failure) for t in r.tests]
    # a file left beside the target is seen by the test's listdir: the folder is one
    litter = source("save-file").replace("        os.replace(tmp, path)\n",
                                         "        import shutil\n        shutil.copy(tmp, path)\n")
    v = verdicts(grade(p, litter))
    assert v["test_example_save"] == "WA"


def test_no_test_file_is_found_from_the_submission(bank):
    # the shared folder holds what the two processes write, nothing else: the tests' files are
    # mounted elsewhere, in the trusted sandbox only. A file that looks everywhere it can for
    # a test file, and answers right only if it finds this problem's (by its text: a clone under
    # /tmp has its venv bound back there, and that holds other packages' test files), is not
    # accepted.
    p = bank["save-file"]
    spy = source("save-file").replace("def line_count(path):\n", '''def line_count(path):
    import os
    roots = {"/tmp", os.path.dirname(path), os.path.dirname(os.path.dirname(path)), os.getcwd()}
    for root in roots:
        for folder, _, files in os.walk(root):
            for f in files:
                if f.startswith("test") and f.endswith(".py"):
                    try:
                        text = open(os.path.join(folder, f), encoding="utf-8").read()
                    except (OSError, UnicodeError):
                        continue
                    if "def test_the_submission_reads_a_file_of_the_test" in text:
                        return 3
    return -1
''', 1)
    v = verdicts(grade(p, spy, suite="hidden"))
    assert v["test_the_submission_reads_a_file_of_the_test"] == "WA"


# ---- a runtime module served by the trusted side -----------------------------------------------

def test_a_served_module_counts_the_kernels_accesses_and_the_spy_sees_its_launch(bank):
    # tinysim (tests/fixtures/handbook_shared/runtime, ours) is imported by the test and the
    # solution: one copy, in the trusted process, so its counts and the test's spy on
    # `ts.launch` see what the student's kernel does; the starter reads three times a lane
    p = bank["lane-mirror"]
    assert p.config.handbook.modules == ["checker", "tinysim"]
    r = grade(p, source("lane-mirror"))
    starter = grade(p, source("lane-mirror", "starter.py"))
    res = check_problem(p, graded=known({source("lane-mirror"): r,
                                         source("lane-mirror", "starter.py"): starter}))
    assert res.errors == [], res.errors
    assert str(r.verdict) == "AC", [(t.name, str(t.verdict), t.failure) for t in r.tests]
    v = verdicts(starter)
    assert v == {"test_example": "AC", "test_two_reads_a_lane": "WA",
                 "test_one_launch_seen_by_a_spy": "WA"}, v


def test_a_kernel_cannot_reset_the_simulators_state(bank):
    # the served module's objects refuse attribute writes from the submission: a kernel that
    # resets its lane's counters (`lane.stats = ...`) fails instead of hiding its reads
    p = bank["lane-mirror"]
    forge = source("lane-mirror", "starter.py").replace(
        "    a = x[i]\n", "    a = x[i]\n    lane.stats = ts.Stats()\n", 1)
    v = verdicts(grade(p, forge))
    assert v["test_two_reads_a_lane"] != "AC" and v["test_example"] != "AC", v


def test_only_the_served_modules_own_public_names_cross(bank):
    p = bank["lane-mirror"]
    peek = source("lane-mirror").replace(
        "def mirror(xs):\n",
        "def mirror(xs):\n    ts.inspect  # a module the runtime imported: refused\n", 1)
    v = verdicts(grade(p, peek))
    assert v["test_example"] != "AC" and v["test_two_reads_a_lane"] == "AC", v
