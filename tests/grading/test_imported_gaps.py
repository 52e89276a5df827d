"""What still differs from one process (docs/IMPORTED_GRADING.md, "Limits of the design";
docs/HANDBOOK_RUN.md): two handbook-format problems of our own, each with the shape of a
handbook problem that does not prove itself through the call proxy (cu-custom-op,
cu-flash-attn). In one process each proves itself; through the proxy the strict xfails say
what is not carried: when a change carries it, they pass and must become plain asserts.

- op-registry: the tests reach the student's operator through torch's process-wide registry
  (`torch.ops.fixture_ops.double`), which `@torch.library.custom_op` fills in the process
  that imports the solution: the submission's, never the tests'. The reference is IE (the
  platform's limit, said so), not a verdict on the student.
- tiled-sums: the tests measure the call's memory with `tracemalloc`, which counts the
  tests' process; the student's allocations are in the other one, so a solution building the
  whole matrix passes the memory test (a hole: it checks less than one process does)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from imported_bank import imported_bank

from judge import grade
from judge.grading.proxied import is_proxied
from judge.problem import load_problem

BOOK = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_gaps" / "book"

pytestmark = pytest.mark.usefixtures("run_cache")


@pytest.fixture(scope="module")
def bank(tmp_path_factory) -> dict:
    return imported_bank(tmp_path_factory, BOOK, "gaps")


def one_process(problem, tmp_path: Path):
    """The same problem without `[source]`: not proxied, graded as the handbook's judge runs
    it (solution and tests in one process)."""
    shutil.copytree(problem.path.parents[1], tmp_path, dirs_exist_ok=True)
    folder = tmp_path / "problems" / problem.path.name
    toml = folder / "problem.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(text[:text.index("[source]")], encoding="utf-8")
    plain = load_problem(folder)
    assert not is_proxied(plain)
    return plain


_graded: dict[tuple[str, str], object] = {}


def graded(problem, file: Path):
    """`file` of `problem` graded once per module: the registry test and the proof through the
    proxy below read the same grading of op-registry's reference."""
    key = (str(problem.path), str(file))
    if key not in _graded:
        _graded[key] = grade(problem, file.read_text(encoding="utf-8"))
    return _graded[key]


def verdicts(problem) -> tuple[str, str]:
    ref = graded(problem, problem.reference_path)
    starter = graded(problem, problem.starter_path)
    return str(ref.verdict), str(starter.verdict)


@pytest.mark.parametrize("slug", ["op-registry", "tiled-sums"])
def test_each_proves_itself_in_one_process(bank, slug, tmp_path):
    ref, starter = verdicts(one_process(bank[slug], tmp_path))
    assert ref == "AC" and starter != "AC", (ref, starter)


def test_a_registry_the_tests_read_is_their_own_process(bank):
    p = bank["op-registry"]
    assert is_proxied(p)
    r = graded(p, p.reference_path)
    assert str(r.verdict) == "IE", r.verdict   # the platform's limit, never WA on the student
    assert "fixture_ops" in f"{r.ie_cause} {r.platform_error}", (r.ie_cause, r.platform_error)


@pytest.mark.xfail(strict=True, reason="torch's op registry is per process: not carried")
def test_op_registry_proves_itself_through_the_proxy(bank):
    ref, starter = verdicts(bank["op-registry"])
    assert ref == "AC" and starter != "AC", (ref, starter)


@pytest.mark.xfail(strict=True, reason="tracemalloc counts the tests' process only")
def test_tiled_memory_proves_itself_through_the_proxy(bank):
    ref, starter = verdicts(bank["tiled-sums"])
    assert ref == "AC" and starter != "AC", (ref, starter)
