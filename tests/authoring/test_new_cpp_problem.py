"""`judge new ID SLUG --lang cpp` (issue 31): a C++ problem in this platform's folder format
(the one `judge import` writes from the handbook's cpp book) that `judge check` proves as it
is: its reference AC, its starter not, its wrong submission WA at the case its `// expect:`
header names."""

from __future__ import annotations

import pytest

from judge.authoring.check import check_problem, parse_header
from judge.cli.main import main as judge_main
from judge.grading.cpp import toolchain
from judge.problem import load_problem

pytestmark = pytest.mark.usefixtures("fresh_cache")


def test_judge_new_lang_cpp_writes_a_cpp_problem(tmp_path, capsys):
    root = tmp_path / "problems"
    assert judge_main(["new", "950", "ring-sum", "--lang", "cpp", "--root", str(root)]) == 0
    assert "judge check" in capsys.readouterr().out
    p = load_problem(str(root / "950-ring-sum"))
    assert (p.language, p.submission_file, p.config.native.sanitize) == (
        "cpp", "user.cpp", "address,undefined")
    assert p.browser is False and p.config.draft is True
    assert p.reference_path == (p.path / "reference" / "solution.cpp").resolve()
    assert p.native_test_path.is_file() and p.public_files() == {}
    assert [t.name for t in p.tests("public")] == ["public/test.cpp::example_small"]
    assert [t.function for t in p.tests("hidden")] == ["negative_numbers", "empty", "long"]
    assert p.statement("en").startswith("# Ring sum") and "前缀和" in p.statement("zh")
    wrong = p.submissions("wrong_answer")
    assert [w.name for w in wrong] == ["empty_gives_zero.cpp"]
    assert parse_header(wrong[0].read_text()) == ("WA", ["hidden/test.cpp::empty"])
    # the messages' language is still --lang's too; a Python problem is still the default
    assert judge_main(["new", "951", "plain", "--lang", "zh", "--root", str(root)]) == 0
    assert load_problem(str(root / "951-plain")).language == "python"
    assert judge_main(["new", "952", "ring-sum", "--lang", "cpp", "--root", str(root)]) == 2


@pytest.mark.skipif(not toolchain.find().pick("address,undefined"),
                    reason="no C++ compiler with AddressSanitizer here")
def test_judge_check_proves_the_new_cpp_problem_as_it_is(tmp_path, capsys):
    root = tmp_path / "problems"
    assert judge_main(["new", "950", "ring-sum", "--lang", "cpp", "--root", str(root)]) == 0
    res = check_problem(str(root / "950-ring-sum"))
    assert res.ok, [(s.label, s.problems) for s in res.submissions] + res.errors
    got = {s.label: str(s.verdict) for s in res.submissions}
    assert got == {"reference": "AC", "starter": "WA",
                   "wrong_answer/empty_gives_zero.cpp": "WA"}
    assert judge_main(["check", str(root / "950-ring-sum"), "--problems", str(root)]) == 0
    assert "950-ring-sum: OK" in capsys.readouterr().out
