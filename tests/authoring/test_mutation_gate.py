"""`judge check --mutate`: the mutator's operators and what it leaves alone, CUDA branches, the
fail-fast grading it relies on, and the gate end to end on the fixture problem 801 (a tally
whose every mutant's fate is known: see tests/fixtures/mutation/reference/tally.py)."""

import ast
import json
import shutil
from pathlib import Path

import pytest

from judge import grade, load_problem
from judge.authoring.mutation.gate import mutate_problem
from judge.authoring.mutation.lines import cuda_lines
from judge.authoring.mutation.mutants import generate
from judge.cli import mutation as mutation_cli
from judge.cli.console import Console
from judge.cli.main import main
from judge.grading.reference_cache import ReferenceCache
from judge.judging import python_ast
from judge.problem import ProblemError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TALLY = FIXTURES / "mutation" / "problems" / "801-tally"
TALLY_REF = "tests/fixtures/mutation/reference/tally.py"

SNIPPET = '''"""Docstring: never mutated."""
import logging
from typing import Literal

__all__ = ["f"]
log = logging.getLogger(__name__)


def f(xs: list[int], n: int = 2) -> Literal[True]:
    total = 0  # running sum
    for x in xs[:n]:
        if x < 0 or not x:
            continue
        total += x * 2
    log.info("total %d", total)
    return total
'''


def test_operators_and_what_they_leave_alone():
    ms = generate(SNIPPET)
    changes = {(m.line, m.operator, m.before, m.after) for m in ms}
    for expected in [
        (9, "number", "def f(xs: list[int], n: int = 2) -> Literal[True]:",
         "def f(xs: list[int], n: int = 3) -> Literal[True]:"),
        (10, "number", "total = 0", "total = -1"),         # the comment is not part of a diff
        (10, "delete", "total = 0", "pass"),
        (11, "slice", "for x in xs[:n]:", "for x in xs[:n + 1]:"),
        (12, "boolop", "if x < 0 or not x:", "if x < 0 and not x:"),
        (12, "compare", "if x < 0 or not x:", "if x <= 0 or not x:"),
        (12, "not", "if x < 0 or not x:", "if x < 0 or x:"),
        (13, "loop", "continue", "break"),
        (14, "arith", "total += x * 2", "total -= x * 2"),
        (14, "arith", "total += x * 2", "total += x // 2"),
        (16, "delete", "return total", "return None"),
    ]:
        assert expected in changes, expected
    # the docstring, imports, __all__, the annotations and the logging call stay as they are
    assert not {m.line for m in ms} & {1, 2, 3, 5, 15}
    assert all("Literal[True]" in m.after for m in ms if m.line == 9)


def test_each_mutant_is_one_local_change_that_compiles():
    ms = generate(SNIPPET)
    assert [m.index for m in ms] == list(range(1, len(ms) + 1))
    assert [m.line for m in ms] == sorted(m.line for m in ms)
    assert len({m.source for m in ms}) == len(ms) and SNIPPET not in {m.source for m in ms}
    original = SNIPPET.splitlines()
    for m in ms:
        compile(m.source, "m.py", "exec")
        assert ast.dump(python_ast.parse(m.source)) != ast.dump(python_ast.parse(SNIPPET))
        lines = m.source.splitlines()
        assert lines[:m.line - 1] == original[:m.line - 1]
        assert lines[len(lines) - (len(original) - m.end_line):] == original[m.end_line:]
        assert "# running sum" in m.source
    assert [(m.line, m.after) for m in generate(SNIPPET)] == [(m.line, m.after) for m in ms]


def test_cuda_branches():
    src = ("def f(t, device):\n"
           "    \"\"\"A docstring that names CUDA is not code.\"\"\"\n"
           "    if getattr(t, 'is_cuda', False):\n"
           "        return t.cpu()\n"
           "    if device != 'cuda':\n"
           "        x = t\n"
           "    else:\n"
           "        x = t.pin_memory()\n"
           "    if x.is_pinned():\n"
           "        x = x + 0\n"
           "    torch.cuda.synchronize()\n"
           "    return x\n")
    assert cuda_lines(src) == {4, 8, 10, 11}


def test_problem_toml_check_table(tmp_path):
    assert load_problem(TALLY).config.check.mutation_min == 0.8
    assert load_problem(FIXTURES / "problems" / "001-lru-cache").config.check.mutation_min == 0
    shutil.copytree(TALLY, tmp_path / "801-tally")
    toml = tmp_path / "801-tally" / "problem.toml"
    toml.write_text(toml.read_text().replace("mutation_min = 0.8", "mutation_min = 1.5"))
    with pytest.raises(ProblemError, match="check.mutation_min"):
        load_problem(tmp_path / "801-tally")


def test_stop_at_first_failure(tmp_path):
    wrong = (FIXTURES / "problems" / "001-lru-cache" / "submissions" / "wrong_answer" /
             "fifo.py").read_text()
    r = grade(FIXTURES / "problems" / "001-lru-cache", wrong, reveal_hidden=True,
              cache=ReferenceCache(tmp_path), stop_at_first_failure=True)
    verdicts = {t.name: str(t.verdict) for t in r.tests}
    assert str(r.verdict) == "WA", r.ie_cause
    assert verdicts["public/test_basic.py::test_eviction_order"] == "WA"
    hidden = [t for t in r.tests if t.suite == "hidden"]
    assert hidden and all(str(t.verdict) == "NR" for t in hidden)  # never started
    assert "stopped at the first failing test" in hidden[0].failure.message


@pytest.fixture(scope="module")
def gate(tmp_path_factory):
    return mutate_problem(TALLY, device="cpu", jobs=2,
                          cache=ReferenceCache(tmp_path_factory.mktemp("refcache")))


def test_gate_kills_pinned_mutants_and_lists_the_rest(gate):
    assert gate.errors == [] and gate.warnings == []
    status = {m.mutant.index: m.status for m in gate.results}
    assert len(status) == 14
    by_diff = {m.mutant.diff(TALLY_REF): m for m in gate.results}
    pinned = by_diff[f"{TALLY_REF}:19: self.counts[key] = self.counts.get(key, 0) + 1 → "
                     "self.counts[key] = self.counts.get(key, 0) - 1"]
    assert pinned.status == "killed" and pinned.killed_by.startswith("public/test_tally.py")
    untested = by_diff[f"{TALLY_REF}:18: self.last = key → pass"]
    assert untested.status == "survived" and untested.verdict == "AC"
    assert by_diff[f"{TALLY_REF}:8: return value.cpu() → return None"].status == "CUDA-only"
    assert by_diff[f"{TALLY_REF}:22: self.counts = {{}} → pass"].status == "not run"
    assert [(m.mutant.line, m.status) for m in gate.survivors] == [
        (8, "CUDA-only"), (17, "survived"), (18, "survived"), (22, "not run")]
    # 10 of the 13 a CPU can reach are killed: 77% < the problem's 80%
    assert gate.summary() == ("mutants 14 killed 10 survived 2 (not run on cpu: 2, CUDA-only: "
                              "1) killed share 77% (min 80%)")
    assert not gate.ok
    d = gate.to_dict()
    assert d["summary"]["killed"] == 10 and d["summary"]["cuda_only"] == 1 and not d["ok"]
    json.dumps(d)


def test_gate_output_and_exit_status(gate, monkeypatch, capsys):
    con = Console("en", color=False)
    mutation_cli.print_mutation(con, gate)
    out = capsys.readouterr().out
    assert f"{TALLY_REF}:18: self.last = key → pass" in out
    assert "not run on cpu" in out and "CUDA-only" in out
    assert "mutants 14 killed 10 survived 2" in out and "FAILED" in out
    assert "killed" not in out.split("\n", 2)[1]  # the table lists only what was not killed

    monkeypatch.setattr(mutation_cli, "mutate_problem", lambda *a, **k: gate)
    assert main(["check", "--mutate", str(TALLY), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)[0]["summary"]["killed_share"] == 10 / 13
    monkeypatch.setattr(gate, "minimum", 0.75)
    assert main(["check", "--mutate", str(TALLY)]) == 0
    assert "OK" in capsys.readouterr().out
