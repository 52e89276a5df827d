"""Problems that need the handbook's install step (`tritonkit.install()` before the solution and
the tests are imported, so that `import triton` finds a stand-in): `judge import` reads the
triton requirement off the code as the handbook does, brings the runtime module, records
`[handbook] install`, and every process that imports the solution or the tests runs it first.
tests/fixtures/handbook_triton is a clone's layout written for these tests: its `tritonkit.py`
is a tiny module of ours whose install() puts a plain-Python `triton` in sys.modules (triton
itself is not installed here)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from judge import check_problem, load_problem
from judge.authoring.handbook_format import read_problem
from judge.authoring.import_check import support_warnings
from judge.authoring.import_runtime import all_requires
from judge.authoring.importer import LICENCE, import_problems
from judge.cli.main import main as judge_main
from judge.problem.config import ProblemError

CLONE = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_triton" / "practice"
RUNTIME = CLONE / "runtime"
SCALE = CLONE / "problems" / "kern" / "scale-vector"

pytestmark = pytest.mark.usefixtures("run_cache")


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """The fixture imported once into a bank of its own (folder, import result)."""
    bank = tmp_path_factory.mktemp("triton") / "problems"
    res = import_problems([CLONE / "problems"], bank,
                          source_url="https://example.org/practice/problems")
    assert not res.refused, res.refused
    (item,) = res.imported
    return item, res


def _verdicts(p) -> dict[str, str]:
    checked = check_problem(p)
    return {r["submission"]: r["verdict"] for r in checked.table()}, checked


def test_triton_is_not_installed_here():
    # the point of the install step: without it `import triton` fails in these processes
    assert importlib.util.find_spec("triton") is None


def test_requirements_are_read_off_the_code_as_the_handbook_does():
    hp = read_problem(SCALE)
    assert hp.requires == []  # the front matter says nothing
    assert all_requires(hp) == ["numpy", "triton"]


def test_import_records_the_install_step_and_proves_the_problem(imported):
    item, res = imported
    p = load_problem(item.folder)
    assert p.config.handbook.modules == ["checker", "tritonkit"]
    assert p.config.handbook.install == ["tritonkit"]
    # an install module runs in each process, no request per access: the numpy net
    assert (p.limits.wall_s, p.limits.cpu_s) == (60, 60)
    assert p.browser is False  # triton and numpy: Run goes to the server
    ref = item.folder.parents[1] / "reference"
    assert (ref / "tritonkit.py").read_bytes() == (RUNTIME / "tritonkit.py").read_bytes()
    src = tomllib.loads((ref / "tritonkit.source.toml").read_text(encoding="utf-8"))["source"]
    assert src["licence"] == LICENCE and src["path"] == "practice/runtime/tritonkit.py"
    assert any("install step" in n and "tritonkit.install()" in n for n in item.notes), item.notes

    # its tests' `import triton` is met by the install step: no "does not have" warning
    assert support_warnings(p) == []
    rows, checked = _verdicts(p)
    assert checked.ok, (checked.errors, [(s.label, s.problems) for s in checked.submissions])
    assert rows["reference"] == "AC" and rows["starter"] != "AC", rows


def test_without_the_install_step_the_reference_cannot_run(imported, tmp_path):
    # the same problem with `install` taken out: `import triton` fails in both processes, so
    # the AC above is owed to the step (run in the tests' and the submission's process)
    item, _ = imported
    bank = tmp_path / "problems"
    shutil.copytree(item.folder.parents[1], tmp_path, dirs_exist_ok=True)
    folder = bank / item.folder.name
    toml = folder / "problem.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(re.sub(r"^install = .*\n", "", text, flags=re.M), encoding="utf-8")
    p = load_problem(folder)
    assert p.config.handbook.install == []
    rows, _ = _verdicts(p)
    assert rows["reference"] != "AC", rows


def test_one_process_run_installs_too(imported, tmp_path):
    # without `[source]` the problem is not proxied: the plain runner imports solution and tests
    item, _ = imported
    shutil.copytree(item.folder.parents[1], tmp_path, dirs_exist_ok=True)
    folder = tmp_path / "problems" / item.folder.name
    toml = folder / "problem.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(text[:text.index("[source]")], encoding="utf-8")
    p = load_problem(folder)
    assert p.config.source is None
    from judge.grading.proxied import is_proxied
    assert not is_proxied(p)
    rows, checked = _verdicts(p)
    assert rows["reference"] == "AC" and rows["starter"] != "AC", (rows, checked.errors)


def test_install_must_name_a_mounted_module(imported, tmp_path):
    item, _ = imported
    shutil.copytree(item.folder.parents[1], tmp_path, dirs_exist_ok=True)
    toml = tmp_path / "problems" / item.folder.name / "problem.toml"
    text = toml.read_text(encoding="utf-8")
    for bad, why in (('install = ["minitl"]', "does not list"),
                     ('install = ["tritonkit", "tritonkit"]', "twice"),
                     ('install = ["../x"]', "not a module name")):
        toml.write_text(re.sub(r"^install = .*$", bad, text, flags=re.M), encoding="utf-8")
        with pytest.raises(ProblemError, match=re.escape(why)):
            load_problem(toml.parent)


def test_refused_without_the_runtime_folder(tmp_path, capsys):
    loose = tmp_path / "loose" / "scale-vector"
    shutil.copytree(SCALE, loose)
    problems = tmp_path / "bank" / "problems"
    assert judge_main(["import", str(loose), "--problems", str(problems), "--no-check"]) == 1
    out = capsys.readouterr().out
    assert "refused" in out and "tritonkit.install()" in out and "--runtime DIR" in out, out
    assert not (tmp_path / "bank" / "reference" / "tritonkit.py").exists()
    # with the folder named, it imports
    assert judge_main(["import", str(loose), "--problems", str(problems), "--no-check",
                       "--runtime", str(RUNTIME)]) == 0
    assert (tmp_path / "bank" / "reference" / "tritonkit.py").is_file()


def test_page_runner_installs_with_prefer_real_false(imported):
    # the page's runner, as Run in a browser would (the fixture is pure Python): the public
    # test_example_backend asserts the solution's `triton` came from install(prefer_real=False)
    from page_support import default_root, page_spec, run_page

    item, _ = imported
    p = load_problem(item.folder)
    spec = page_spec(p, p.reference_path.read_text(encoding="utf-8"), None)
    with_step, without = run_page(default_root(), [dict(spec, install=p.config.handbook.install),
                                                   spec], timeout_s=120)
    assert with_step["verdict"] == "AC", with_step
    assert without["verdict"] != "AC" and "triton" in (without.get("unsupported") or ""), without
