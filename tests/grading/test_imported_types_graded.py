"""The submission's classes as real types, graded in the sandboxes: the shape-kit fixture problem
(tests/fixtures/handbook_types) proves itself, and wrong files (a metaclass that says every object
is an instance, a Row that is not a Sequence, a descriptor that does not validate) are not accepted.
The proxy's side of the same shapes, without a sandbox: tests/runner/test_proxy_types_*.py."""

from __future__ import annotations

import pytest
from imported_bank import imported_bank
from paths import REPO

FIXTURES = REPO / "tests" / "fixtures" / "handbook_types" / "book"


@pytest.fixture(scope="module")
def shape_kit(tmp_path_factory):
    return imported_bank(tmp_path_factory, FIXTURES, "types")["shape-kit"]


def _verdicts(problem, src: str) -> dict:
    from judge.grading.grader import grade
    r = grade(problem, src)
    return {t.name.split("::")[1]: str(t.verdict) for t in r.tests} | {"": str(r.verdict)}


def test_shape_kit_proves_itself_and_wrong_files_are_not_accepted(shape_kit, monkeypatch,
                                                                  tmp_path):
    from judge.authoring.check import check_problem
    monkeypatch.setenv("KVPRACTICE_CACHE", str(tmp_path / "cache"))
    assert check_problem(shape_kit).errors == []
    src = (FIXTURES / "shape-kit" / "solution.py").read_text(encoding="utf-8")
    assert _verdicts(shape_kit, src)[""] == "AC"
    # a metaclass that says every object is a Rect, and a scaled() of another class: in one
    # process `isinstance(fake, Rect)` holds; here it is the handle's class that decides
    liar = src.replace("class Rect(Shape):", "class Yes(type):\n"
                       "    def __instancecheck__(cls, obj):\n        return True\n\n\n"
                       "class Fake:\n    def area(self):\n        return 24\n\n\n"
                       "class Rect(Shape, metaclass=Yes):").replace(
        "        return Rect(self.w * k, self.h * k)", "        return Fake()")
    assert liar != src
    v = _verdicts(shape_kit, liar)
    assert v["test_example"] == "WA" and v[""] != "AC"
    # a Row that is not a Sequence, and a descriptor that does not validate
    plain_row = src.replace("class Row(Sequence):", "class Row:")
    assert _verdicts(shape_kit, plain_row)["test_rows_are_sequences"] != "AC"
    lax = src.replace("        if value < 0:\n", "        if value < -10 ** 9:\n")
    assert _verdicts(shape_kit, lax)["test_descriptor"] == "WA"
