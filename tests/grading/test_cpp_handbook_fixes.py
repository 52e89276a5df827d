"""What the real handbook's C++ problems found (docs/HANDBOOK_RUN.md, "C++ problems"), on
fixtures of our own in tests/fixtures/handbook_cpp:

- cpp/task-errors: a task's exception handed to another thread through std::future. TSan
  reports libstdc++'s uninstrumented reference counts as a race; the suppressions name those
  functions, and with `symbolize=0` no rule ever matched: the reference failed its own test
  (IE), as the handbook's cpp-thread-pool did by chance.
- cpp/token-stack: a starter that leaves out a member the tests call is CE, which `judge
  check` took for a broken starter (the handbook's cpp-shared-ptr has no reset()); and the
  compiler's sentence named the test's types inside the build's random namespace
  ("Stack<PJ_3f9c...::Token>")."""

from __future__ import annotations

import re

import pytest
from cpp_bank import cpp_bank, source

from judge import grade
from judge.authoring.check import check_problem
from judge.grading.cpp import toolchain

# a fresh cache per test: the reference's run is what is under test, never a cached one
pytestmark = [pytest.mark.usefixtures("fresh_cache"),
              pytest.mark.skipif(not toolchain.find().pick("thread"),
                                 reason="no C++ compiler with ThreadSanitizer here")]


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    return cpp_bank(tmp_path_factory)


def test_an_exception_handed_between_threads_is_not_a_race(bank):
    r = grade(bank["task-errors"], source("task-errors"))
    assert r.verdict == "AC", r.to_dict()
    assert {t.name.split("::")[1]: str(t.verdict) for t in r.tests} == {
        "example_value": "AC", "runs_in_another_thread": "AC", "errors_reach_get": "AC"}
    starter = grade(bank["task-errors"], source("task-errors", "starter.cpp"))
    assert starter.verdict != "AC"


def test_a_starter_that_leaves_out_what_the_tests_call_is_ce_in_the_tests_words(bank):
    r = grade(bank["token-stack"], source("token-stack", "starter.cpp"))
    ce = r.to_dict()["compile_error"]
    assert r.verdict == "CE" and ce["line"] is None
    assert ce["message"] == ("the tests do not compile with your file: 'class Stack<Token>' "
                             "has no member named 'size'")
    assert not re.search(r"PJ_[0-9a-f]{16}", str(r.to_dict()))


def test_judge_check_proves_a_starter_that_leaves_out_what_the_tests_call(bank):
    res = check_problem(bank["token-stack"], reference_runs=1)
    assert res.ok, [c.problems for c in res.submissions] + res.errors


def test_judge_check_still_refuses_a_starter_with_an_error_in_its_own_lines(bank, tmp_path):
    p = bank["token-stack"]
    starter = p.starter_path.read_text(encoding="utf-8")
    p.starter_path.write_text(starter.replace("void push(T v) {", "void push(T v) { oops;"),
                              encoding="utf-8")
    try:
        res = check_problem(p, reference_runs=1)
    finally:
        p.starter_path.write_text(starter, encoding="utf-8")
    problems = [m for c in res.submissions for m in c.problems]
    assert not res.ok and "the starter must import and fail its tests, got CE" in problems
