"""Imported problems on both paths (issue 27, item 5): each suite run's two processes, the
trusted tests and the submission's, are cold sandboxes or forks of the problem's warm zygote
(judge/grading/launch.py), with the same limits, the same walls and the same verdicts.

Every test here runs on both paths (tests/sandbox_paths.py: on the warm one no run may fall
back to cold). The limits are reached in the submission's process, whose end the grader
reads from outside it (its sandbox's result), never from anything that process says.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from imported_bank import imported_bank
from lowered_floor import floor_lowered

from judge import grade
from judge.judging.bounded import SCRATCH_MB

pytestmark = pytest.mark.usefixtures("run_cache", "sandbox_path")  # cold and warm (tests/sandbox_paths.py)

BOOK = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_graded" / "book"
SLUGS = sorted(p.name for p in BOOK.iterdir() if (p / "solution.py").is_file())


@pytest.fixture(scope="module")
def bank(tmp_path_factory) -> dict:
    return imported_bank(tmp_path_factory, BOOK, "warm-graded")


def source(slug: str, file: str = "solution.py") -> str:
    return (BOOK / slug / file).read_text(encoding="utf-8")


def _in_get(body: str) -> str:
    """tiny-lru's solution with `body` run first in every get()."""
    lines = "".join(f"        {line}\n" for line in body.strip().splitlines())
    return source("tiny-lru").replace("    def get(self, key):\n",
                                      "    def get(self, key):\n" + lines, 1)


def _path_of(report) -> str:
    return report.provenance["sandbox_layers"].get("grader_path", "cold")


def _essence(report) -> dict:
    tmp = re.compile(r"/(?:tmp|\.judge-warm)/[^\s'\"):]*")
    first = report.to_dict().get("first_failure") or {}
    return {"verdict": str(report.verdict), "test": first.get("test"),
            "kind": first.get("kind"), "message": tmp.sub("<path>", first.get("message") or ""),
            "tests": {t.name: str(t.verdict) for t in report.tests}}


def test_the_solution_is_accepted_with_both_processes_on_the_path(bank, sandbox_path):
    r = grade(bank["tiny-lru"], source("tiny-lru"))
    assert str(r.verdict) == "AC", r.ie_cause
    # "warm" only when both processes of every run were forks (launch._layers)
    assert _path_of(r) == sandbox_path
    assert r.provenance["missing_layers"] == []


SUBMISSION_LIMITS = {
    # bytes written as they are allocated: the cgroup's limit is reached (a single huge
    # allocation may instead fail as a MemoryError, the test's RE)
    "MLE": "held = []\nwhile True:\n    held.append(b'x' * (64 << 20))",
    "TLE": "while True:\n    pass",
    "OLE": "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)",
    "RE": "import os\nos._exit(0)",
}


@pytest.mark.parametrize("verdict", sorted(SUBMISSION_LIMITS))
def test_a_limit_reached_in_the_submissions_process_is_its_verdict(bank, verdict):
    # a spin holds its run for the floor plus grace: TLE whatever the floor (tests/lowered_floor.py)
    problem = floor_lowered(bank["tiny-lru"], 1.0) if verdict == "TLE" else bank["tiny-lru"]
    r = grade(problem, _in_get(SUBMISSION_LIMITS[verdict]), suite="public")
    assert str(r.verdict) == verdict, (r.verdict, r.ie_cause)
    assert {str(t.verdict) for t in r.tests if t.name.endswith("test_example")} == {verdict}


# What the submission's process is, told by itself as get()'s answer: the public test's message
# shows what it returned. The same on both paths, and what a cold run of the runner holds.
STATUS = """
import os, socket
st = dict(l.split(':', 1) for l in open('/proc/self/status'))
caps = ','.join(st[k].strip() for k in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'))
pids = sorted(int(n) for n in os.listdir('/proc') if n.isdigit())
return (f"caps={caps} nnp={st['NoNewPrivs'].strip()} seccomp={st['Seccomp'].strip()} "
        f"root={os.getuid() == 0} pids={len(pids)} net={sorted(n for _, n in socket.if_nameindex())}")
"""


def test_the_submissions_process_holds_what_a_cold_one_holds(bank):
    r = grade(bank["tiny-lru"], _in_get(STATUS), suite="public")
    said = r.to_dict()["first_failure"]["message"]
    zero = ",".join(["0000000000000000"] * 5)
    assert f"caps={zero} nnp=1 seccomp=2 root=False" in said, said
    # its own pid namespace (its pid 1 and itself), no network but loopback
    assert re.search(r"pids=[12] net=\['lo'\]", said), said


def test_the_shared_folder_is_capped_as_a_runs_scratch(bank):
    """The folder both processes share is a tmpfs of its own, capped as a run's scratch: on the
    warm path it reaches each fork as a detached copy of that mount (forkserver.detached_copy),
    not through the zygote's view of the host's /tmp, under which a write would fill the
    host's disk."""
    fill = """
import tempfile
written = 0
try:
    while written < (1 << 30):  # files of 8 MiB: each under the run's file size limit
        with open(f"{tempfile.gettempdir()}/fill{written}", 'wb') as f:
            for _ in range(8):
                f.write(b'x' * (1 << 20))
                f.flush()
                written += 1 << 20
except OSError:
    pass
return f"wrote {written >> 20} MiB"
"""
    r = grade(bank["tiny-lru"], _in_get(fill), suite="public")
    said = r.to_dict()["first_failure"]["message"]
    wrote = int(re.search(r"wrote (\d+) MiB", said).group(1))
    assert wrote <= SCRATCH_MB, said


_cold: dict[tuple[str, str], object] = {}


def _graded_cold(bank, slug: str, file: str):
    """The file's cold grading, made once for this module: each path's parameter compares
    its own grading with it."""
    from judge.grading import warm_pool

    if (slug, file) not in _cold:
        with warm_pool.forced(False):
            _cold[slug, file] = grade(bank[slug], source(slug, file))
    return _cold[slug, file]


@pytest.mark.parametrize("sandbox_path", ["warm"], indirect=True)
@pytest.mark.parametrize("slug", SLUGS)
def test_every_fixture_grades_the_same_on_both_paths(bank, slug, sandbox_path):
    """The fixture book's solution and starter, graded warm, against the same files graded
    cold. Warm only: a cold parameter would grade each file cold a second time to compare it
    with itself, the slowest part of this module on a busy host."""
    for file in ("solution.py", "starter.py"):
        if not (BOOK / slug / file).is_file():
            continue
        cold = _graded_cold(bank, slug, file)
        here = grade(bank[slug], source(slug, file))
        assert _path_of(here) == sandbox_path and _path_of(cold) == "cold"
        assert _essence(here) == _essence(cold), (slug, file)
