"""A bare `object()` of the tests (a sentinel: `MISSING = object()`, `validate(object(), Any)`
in the handbook's py-validate-typed) crosses to the submission as a handle of kind object and
comes back as itself: it holds no state and answers no public name, so the capability guard
declares it (rpc/capabilities.py); the class `object` itself still does not cross (its
`__subclasses__` would list every class of the tests' process). Fixture book
tests/fixtures/handbook_sentinels/book (first-or: reference IE before, "ProxyRefused: a object
of the tests cannot be handed to the submission")."""

from __future__ import annotations

from pathlib import Path

import pytest
from imported_bank import imported_bank

from judge import grade
from judge.runner.proxy.capabilities import Guard, Kind

BOOK = Path(__file__).resolve().parents[1] / "fixtures" / "handbook_sentinels" / "book"

pytestmark = pytest.mark.usefixtures("run_cache")


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    return imported_bank(tmp_path_factory, BOOK, "sentinels")["first-or"]


def failures(r) -> list:
    return [(t.name, str(t.verdict), t.failure) for t in r.tests if str(t.verdict) != "AC"]


def test_the_guard_declares_a_bare_object_and_not_its_class():
    guard = Guard()
    assert guard.kind(object()) is Kind.OBJECT
    assert guard.kind(object) is None

    class Sub:  # a class of no declared module: its instances are not bare objects
        pass
    assert guard.kind(Sub()) is None


def test_a_sentinel_of_the_tests_crosses_and_comes_back_as_itself(problem):
    src = (BOOK / "first-or" / "solution.py").read_text(encoding="utf-8")
    for i in range(3):
        r = grade(problem, src)
        assert str(r.verdict) == "AC", (i, failures(r))


def test_a_copy_of_the_sentinel_is_rejected(problem):
    src = (BOOK / "first-or" / "solution.py").read_text(encoding="utf-8")
    wrong = src.replace("    return default", "    return object()")
    r = grade(problem, wrong)
    assert str(r.verdict) == "WA", failures(r)
