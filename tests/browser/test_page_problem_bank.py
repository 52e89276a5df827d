"""Problems 141 and 142 in the page: their public suites run in the page's runner
(judge/browser/page_run.py; Pyodide in the browser, a child CPython here, see page_support.py). The
reference passes every public test there with the same observations as in the grading sandbox,
the accepted files pass, and a known-wrong file fails at the observation its header promises.

`judge check` (run by `make test`) proves the whole problems; this only covers the page's side.
"""

from __future__ import annotations

import pytest
from page_support import default_root, run_page
from paths import REPO

from judge import load_problem
from judge.grading.reference_cache import public_expectations
from judge.problem import ProblemBank

# problem -> (a wrong file, the public test it must fail first, the observation it fails at)
WRONG = {
    "141": ("wrong_answer/overflow_dropped.py", "public/test_examples.py::test_example_statement",
            "step 3: gpu_keys(), cpu_keys() after access('C')"),
    "142": ("wrong_answer/free_head_first.py", "public/test_basic.py::test_allocate_and_free",
            "free_queue after free([2, 3, 4]): last block first"),
}

pytestmark = pytest.mark.usefixtures("run_cache")


def page_run(info, source: str, expected) -> dict:
    spec = {"module": info.module, "source": source, "tests": info.public_files(),
            "handbook": info.handbook_sources(), "expected": expected,
            "weights": info.weights}
    return run_page(default_root(), [spec], timeout_s=120)[0]


@pytest.mark.parametrize("pid", sorted(WRONG))
def test_public_suite_runs_in_the_page(pid):
    info = ProblemBank(REPO / "problems", REPO / "reference").get(pid)
    problem = load_problem(pid)
    assert info is not None and info.browser and problem.config.browser
    # What the page may import: never the module being written, never the answer.
    handbook = info.handbook_sources()
    assert info.module not in handbook and problem.reference_path.stem not in handbook

    expected = public_expectations(problem)
    assert set(expected) == {t.name for t in problem.tests("public")}

    ref = page_run(info, problem.reference_path.read_text(encoding="utf-8"), None)
    assert ref["verdict"] == "AC", ref["first_failure"] or ref["compile_error"]
    assert {t["name"] for t in ref["tests"]} == set(expected)
    # the same in the page as in the sandbox
    assert ref["observations"] == {n: e["observations"] for n, e in expected.items()}

    for path in problem.submissions("accepted"):
        res = page_run(info, path.read_text(encoding="utf-8"), expected)
        assert res["verdict"] == "AC", (path.name, res["first_failure"])

    starter = page_run(info, problem.starter_source, expected)
    assert starter["verdict"] not in ("AC", "CE", "unsupported")

    wrong, test, label = WRONG[pid]
    bad = page_run(info, (problem.path / "submissions" / wrong).read_text(encoding="utf-8"),
                   expected)
    ff = bad["first_failure"]
    assert bad["verdict"] == "WA" and ff["test"] == test and ff["label"] == label, ff
    assert 0 < bad["score"] < 1


def test_problem_141_needs_nothing_but_python():
    problem = load_problem("141")
    assert problem.config.requires == [] and problem.config.handbook.modules == []
    assert problem.runs_on() == ["browser", "cpu", "gpu"]


def test_problem_142_is_graded_as_the_handbooks_prefix_cache():
    """The student's file is `prefix_cache` itself, so the sandbox must not mount the handbook's
    copy (the answer) beside it; and no mounted module may import `prefix_cache`, or the hidden
    tests' no-cache baseline would run the student's code too."""
    problem = load_problem("142")
    assert problem.module == "prefix_cache"
    assert problem.reference_path == REPO / "reference" / "prefix_cache.py"
    mounted = {p.stem for p in problem.handbook_paths}
    assert "prefix_cache" not in mounted and "tiered" not in mounted
    for p in problem.handbook_paths:
        text = p.read_text(encoding="utf-8")
        assert "import prefix_cache" not in text and "from prefix_cache" not in text, p.name
