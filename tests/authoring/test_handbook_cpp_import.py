"""`judge import` of the handbook's C++ problems and of its mixed cuda folders (a Python half
and a CUDA C++ half side by side): fixtures of our own in tests/fixtures/handbook_cpp."""

from __future__ import annotations

import shutil

import pytest
from cpp_bank import BOOK

from judge.authoring.handbook_format import read_problems
from judge.authoring.importer import import_problems
from judge.cli.main import main as judge_main
from judge.grading.cpp import toolchain
from judge.problem import load_problem

pytestmark = pytest.mark.usefixtures("run_cache")


def test_a_cpp_problem_becomes_a_cpp_problem_of_the_bank(tmp_path):
    res = import_problems([BOOK / "cpp"], tmp_path / "problems")
    assert not res.refused and [i.key for i in res.imported] == [
        "cpp/lru-cache", "cpp/owned-buffer", "cpp/shared-counter", "cpp/task-errors",
        "cpp/token-stack"]
    p = load_problem(str(res.imported[0].folder))
    assert (p.language, p.submission_file, p.config.native.sanitize) == (
        "cpp", "user.cpp", "address,undefined")
    assert p.starter_path == p.path / "starter" / "user.cpp" and p.starter_path.is_file()
    assert p.reference_path == (p.path / "reference" / "solution.cpp").resolve()
    assert p.native_test_path == p.path / "tests" / "hidden" / "test.cpp"
    assert not (p.path / "tests" / "public").exists() and p.public_files() == {}
    assert [t.name for t in p.tests("public")] == ["public/test.cpp::example_basic",
                                                   "public/test.cpp::example_evict"]
    assert [t.function for t in p.tests("hidden")][-1] == "table_after_mix"
    assert p.config.source.licence == "CC BY-NC-SA 4.0" and p.browser is False
    assert p.explanation() and "std::list" not in p.statement("zh")
    counter = load_problem(str(res.imported[2].folder))
    assert counter.config.native.sanitize == "thread"  # problem.md's `sanitize: thread`


def test_a_mixed_folder_gives_its_python_problem_and_its_cuda_problem_beside_it(tmp_path):
    found, refused = read_problems(BOOK / "cuda" / "vec-scale")
    assert refused == [] and [type(p).__name__ for p in found] == ["HandbookProblem",
                                                                   "NativeProblem"]
    assert "as vec-scale-cuda" in found[0].notes[-1]
    res = import_problems([BOOK / "cuda"], tmp_path / "problems")
    assert [i.key for i in res.imported] == ["cuda/vec-scale", "cuda/vec-scale-cuda"]
    py, cu = (load_problem(str(i.folder)) for i in res.imported)
    assert py.language == "python" and py.starter_path.name == "solution.py"
    assert not list(py.path.rglob("*.cu"))  # the Python problem has nothing of the CUDA half
    assert cu.language == "cuda" and cu.requires == ["cuda"]
    assert [t.name for t in cu.tests("public")] == ["public/test.cu::example_small"]


def test_each_half_of_a_mixed_folder_is_imported_or_refused_on_its_own(tmp_path):
    folder = tmp_path / "cuda" / "vec-scale"
    shutil.copytree(BOOK / "cuda" / "vec-scale", folder)
    test_cu = folder / "test.cu"
    test_cu.write_text(test_cu.read_text().replace('#include "user.cu"', ""))
    res = import_problems([folder], tmp_path / "problems")
    assert [i.key for i in res.imported] == ["cuda/vec-scale"]
    assert res.refused == [(f"{folder.resolve()} (cuda half)",
                            'test.cu does not #include "user.cu", where the student\'s code goes')]


@pytest.mark.skipif(not toolchain.find().pick("address,undefined"), reason="no C++ compiler")
def test_judge_import_proves_each_cpp_problem_and_the_cuda_half_on_the_emulator(tmp_path, capsys):
    one = tmp_path / "book" / "cpp"
    shutil.copytree(BOOK / "cpp" / "lru-cache", one / "lru-cache")
    shutil.copytree(BOOK / "cuda", tmp_path / "book" / "cuda")
    code = judge_main(["import", str(one), str(tmp_path / "book" / "cuda"), "--problems",
                       str(tmp_path / "problems")])
    out = capsys.readouterr().out
    assert "proved    900 cpp/lru-cache (reference AC, starter WA)" in out, out
    assert "proved    901 cuda/vec-scale (reference AC, starter WA)" in out
    # no GPU here: the CUDA C++ half is proved on the CPU emulator (correctness only)
    assert "proved    902 cuda/vec-scale-cuda (reference AC, starter WA)" in out, out
    assert code == 0
