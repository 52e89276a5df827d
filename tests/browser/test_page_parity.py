"""One comparison, in the page too: for every file under problems/*/submissions/ (and the
starter) of each problem the page can run (`browser = true`), the page's runner, run as Pyodide
runs it (tests/page_support.py), and the server's `grade(problem, source, suite="public")` give
the same per-test verdicts and the same first divergence."""

from __future__ import annotations

from pathlib import Path

import pytest
from page_support import page_root, page_spec, run_page

from judge import grade, list_problems, public_expectations
from judge.grading.environment import grading_python

BROWSER = [p for p in list_problems() if p.browser]
DIVERGENCE = ("test", "verdict", "kind", "label", "expected", "got", "path", "index", "message",
              "exc_type", "line", "where", "traceback", "trace")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return page_root(tmp_path_factory.mktemp("page"))


def test_every_page_problem_is_covered():
    assert {p.id for p in BROWSER} >= {"141", "142", "143", "144"}


@pytest.mark.parametrize("problem", BROWSER, ids=lambda p: p.id)
def test_page_and_server_agree(problem, root):
    expected = public_expectations(problem)
    assert list(expected) == [t.name for t in problem.tests("public")]
    files = {f"{p.parent.name}/{p.name}": p.read_text(encoding="utf-8")
             for p in sorted(problem.path.glob("submissions/*/*.py"))}
    files["starter"] = problem.starter_source
    assert any(k.startswith("accepted/") for k in files)
    assert any(k.startswith("wrong_answer/") for k in files)
    page = _agree(problem, files, expected, root)
    assert any(r["verdict"] == "WA" for r in page.values())
    # the reference's entries pass through whole: its timeline reaches the page's failures
    assert any((r["first_failure"] or {}).get("trace") for r in page.values())


def _agree(problem, files: dict, expected: dict, root, fields=DIVERGENCE) -> dict:
    """Runs every file in the page and on the server; asserts they agree; the page's reports."""
    page = dict(zip(files, run_page(root, [page_spec(problem, src, expected, grading_python())
                                           for src in files.values()])))
    for name, source in files.items():
        server = grade(problem, source, suite="public").to_dict()
        got = page[name]
        assert got["verdict"] == server["verdict"], (name, got["first_failure"],
                                                     server["first_failure"])
        assert [(t["name"], t["verdict"]) for t in got["tests"]] == \
            [(t["name"], t["verdict"]) for t in server["tests"]], name
        first = {k: (server["first_failure"] or {}).get(k) for k in fields}
        assert {k: (got["first_failure"] or {}).get(k) for k in fields} == first, name
        if name.startswith("accepted/"):  # a wrong answer may fail only hidden tests
            assert got["verdict"] == "AC", name
    return page


# An imported problem (tests/fixtures/handbook_more, in the handbook's format): its tests use the
# `checker` helpers, which the page's runner must run as the server's does.
BLOCKS = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_more" / "serving" / "block-table"
WRONG_EXAMPLE = (BLOCKS / "solution.py").read_text(encoding="utf-8").replace(
    "    return (tokens", "    if (tokens, block_size) == (5, 4):\n        return 3\n    return (tokens")


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    from judge.cli.main import main as judge_main
    from judge.problem import load_problem

    bank = tmp_path_factory.mktemp("imported") / "problems"
    assert judge_main(["import", str(BLOCKS), "--problems", str(bank), "--no-check"]) == 0
    return load_problem(bank / "900-block-table")


def test_page_and_server_agree_on_an_imported_problem(imported, root):
    assert imported.browser  # pure Python: the page runs it
    expected = public_expectations(imported)
    files = {"accepted/solution.py": (BLOCKS / "solution.py").read_text(encoding="utf-8"),
             "wrong_answer/example_only.py": WRONG_EXAMPLE, "starter": imported.starter_source}
    # Known gap, left to the harness (issue 18 item 3): on the server an imported problem's
    # tests run in a trusted process and the submission behind a call proxy, so the server's
    # report has no line in the student's file and no student frames, where the page (one
    # process) has them. Everything else of the first divergence must agree.
    page = _agree(imported, files, expected, root,
                  fields=tuple(k for k in DIVERGENCE if k not in ("line", "traceback")))
    assert page["wrong_answer/example_only.py"]["verdict"] == "WA"
    assert page["starter"]["verdict"] != "AC"
