"""One comparison, in the page too: for every file under problems/*/submissions/ (and the
starter) of each problem the page can run (`browser = true`), the page's runner, run as Pyodide
runs it (tests/page_support.py), and the server's `grade(problem, source, suite="public")` give
the same per-test verdicts and the same first divergence."""

from __future__ import annotations

import pytest

from judge import grade, list_problems, public_expectations
from judge.grading.environment import grading_python
from page_support import page_root, page_spec, run_page

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
    page = dict(zip(files, run_page(root, [page_spec(problem, src, expected, grading_python())
                                           for src in files.values()])))
    for name, source in files.items():
        server = grade(problem, source, suite="public").to_dict()
        got = page[name]
        assert got["verdict"] == server["verdict"], (name, got["first_failure"],
                                                     server["first_failure"])
        assert [(t["name"], t["verdict"]) for t in got["tests"]] == \
            [(t["name"], t["verdict"]) for t in server["tests"]], name
        first = {k: (server["first_failure"] or {}).get(k) for k in DIVERGENCE}
        assert {k: (got["first_failure"] or {}).get(k) for k in DIVERGENCE} == first, name
        if name.startswith("accepted/"):  # a wrong answer may fail only hidden tests
            assert got["verdict"] == "AC", name
    assert any(r["verdict"] == "WA" for r in page.values())
    # the reference's entries pass through whole: its timeline reaches the page's failures
    assert any((r["first_failure"] or {}).get("trace") for r in page.values())
