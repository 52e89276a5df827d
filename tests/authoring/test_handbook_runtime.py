"""`judge import` brings the handbook's runtime modules (a clone's practice/runtime/, e.g. the
cuda book's simulator) that a problem imports into the bank's reference/, lists them in
`[handbook] modules` with their licence beside them, and refuses a problem whose tests import
a module it can find nowhere. tests/fixtures/handbook_clone is a clone's layout written for
these tests (`fakesim` a tiny runtime module)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from judge import check_problem, load_problem
from judge.authoring.import_runtime import find_runtime
from judge.authoring.importer import (
    CHECKER,
    LICENCE,
    NUMPY_LIMITS,
    SERVED_LIMITS,
    TORCH_LIMITS,
    import_problems,
    suite_limits,
)
from judge.cli.main import main as judge_main

CLONE = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_clone" / "practice"
RUNTIME = CLONE / "runtime"
SQUARES = CLONE / "problems" / "sim" / "lane-squares"

pytestmark = pytest.mark.usefixtures("run_cache")


def _toml(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


def test_runtime_found_by_walking_up_from_the_imported_folder(tmp_path):
    assert find_runtime(SQUARES) == RUNTIME.resolve()
    assert find_runtime(CLONE / "problems") == RUNTIME.resolve()
    assert find_runtime(tmp_path) is None


def test_import_brings_the_runtime_module_and_proves_the_problem(tmp_path):
    bank = tmp_path / "problems"
    res = import_problems([CLONE / "problems" / "sim"], bank,
                          source_url="https://example.org/practice/problems")
    assert not res.refused, res.refused
    (item,) = res.imported
    p = load_problem(item.folder)
    assert p.config.handbook.modules == ["checker", "fakesim"]
    # a served simulator: each access a request, so the run's net is the served one
    assert (p.limits.wall_s, p.limits.cpu_s) == SERVED_LIMITS[:2] == (300, 300)
    ref = tmp_path / "reference"
    assert (ref / "fakesim.py").read_bytes() == (RUNTIME / "fakesim.py").read_bytes()
    # ours, not the clone's checker.py (which raises on import)
    assert (ref / "checker.py").read_bytes() == CHECKER.read_bytes()
    src = _toml(ref / "fakesim.source.toml")["source"]
    problem_src = _toml(item.folder / "problem.toml")["source"]
    assert src["licence"] == LICENCE == problem_src["licence"]
    assert (src["licence_url"], src["attribution"]) == (problem_src["licence_url"],
                                                        problem_src["attribution"])
    assert src["path"] == "practice/runtime/fakesim.py"
    assert src["url"] == "https://example.org/practice/runtime/fakesim.py"
    assert any("fakesim" in n for n in res.notes), res.notes
    assert any("runtime modules" in n and "fakesim" in n for n in item.notes), item.notes

    checked = check_problem(p)
    assert checked.ok, (checked.errors, [(s.label, s.problems) for s in checked.submissions])
    rows = {r["submission"]: r["verdict"] for r in checked.table()}
    assert rows["reference"] == "AC" and rows["starter"] == "RE", rows

    # the same bytes and provenance: nothing rewritten, no note
    again = import_problems([SQUARES], bank, source_url="https://example.org/practice/problems")
    assert not again.refused and not any("fakesim" in n for n in again.notes), again.notes


def test_suite_limits_take_the_larger_net():
    assert suite_limits(False, served=[]) == NUMPY_LIMITS
    assert suite_limits(True, served=[]) == TORCH_LIMITS
    assert suite_limits(False, served=["gpusim"]) == SERVED_LIMITS
    both = suite_limits(True, served=["gpusim"])
    assert both == tuple(max(a, b) for a, b in zip(TORCH_LIMITS, SERVED_LIMITS))


def test_runtime_option_outside_a_clone_layout(tmp_path, capsys):
    loose = tmp_path / "loose" / "lane-squares"
    shutil.copytree(SQUARES, loose)
    problems = tmp_path / "bank" / "problems"
    # no practice/runtime/ above it: refused, with what to do
    assert judge_main(["import", str(loose), "--problems", str(problems), "--no-check"]) == 1
    out = capsys.readouterr().out
    assert "refused" in out and "`fakesim`" in out and "--runtime DIR" in out, out
    assert not (tmp_path / "bank" / "reference" / "fakesim.py").exists()

    assert judge_main(["import", str(loose), "--problems", str(problems), "--no-check",
                       "--runtime", str(RUNTIME)]) == 0
    out = capsys.readouterr().out
    assert "installed the handbook runtime module `fakesim`" in out, out
    (folder,) = problems.iterdir()
    assert _toml(folder / "problem.toml")["handbook"]["modules"] == ["checker", "fakesim"]
    assert (tmp_path / "bank" / "reference" / "fakesim.py").is_file()

    assert judge_main(["import", str(loose), "--problems", str(problems), "--no-check",
                       "--runtime", str(tmp_path / "nowhere")]) == 2
    assert "--runtime" in capsys.readouterr().err


def test_a_module_found_nowhere_refuses_the_problem(tmp_path):
    res = import_problems([CLONE / "problems" / "broken"], tmp_path / "problems")
    assert not res.imported
    ((path, why),) = res.refused
    assert path.endswith("warp-sum")
    assert "`warpsim_not_there`" in why and "neither installed" in why and "fakesim" in why, why
    assert not (tmp_path / "problems").exists() or not any((tmp_path / "problems").iterdir())
