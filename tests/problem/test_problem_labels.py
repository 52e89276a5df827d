"""Observation labels in the reader's language (issue 22 item 4): a problem's labels.zh.json,
its lookup (exact keys, {name} patterns for f-string labels), the problem model and API,
`judge check`'s warning and the CLI's report; every label 141-144's tests record has its Chinese."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest

from judge.authoring.check import CheckResult, _label_checks
from judge.cli.console import Console, print_report
from judge.judging import python_ast
from judge.judging.labels import LabelTable, shape
from judge.problem import load_problem

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = ["141", "142", "143", "144"]


def test_exact_and_pattern_lookups():
    t = LabelTable({"counters": "计数器", "access({n}) returns": "access({n}) 的返回值",
                    "step {i}: access({h}) returns": "第 {i} 步：access({h}) 的返回值",
                    "step {i}: counters": "第 {i} 步：计数器",
                    "{label}: counters": "{label}：计数器", "two users": "两个用户",
                    "seed {n} ({policy})": "种子 {n}（{policy}）"})
    assert t.lookup("counters") == "计数器"
    assert t.lookup("access(42) returns") == "access(42) 的返回值"
    assert t.lookup("step 3: access('a') returns") == "第 3 步：access('a') 的返回值"
    # the pattern with the most fixed text wins over "{label}: counters"
    assert t.lookup("step 2: counters") == "第 2 步：计数器"
    # a placeholder's part is looked up too: exactly, or by pattern
    assert t.lookup("two users: counters") == "两个用户：计数器"
    assert t.lookup("seed 4 (write_back): counters") == "种子 4（write_back）：计数器"
    assert t.lookup("many users: counters") == "many users：计数器"
    assert t.lookup("something else") is None and t.text("something else") == "something else"
    assert shape("step {i + 1}: access({h!r})") == "step {}: access({})"


def _recorded(problem_dir: Path) -> list[tuple[str, bool, str]]:
    """(label or f-string shape, is a pattern, where) of every observe(...) call in its tests."""
    out = []
    for f in sorted(problem_dir.glob("tests/**/*.py")):
        for node in ast.walk(python_ast.parse(f.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and node.args and
                    getattr(node.func, "id", getattr(node.func, "attr", None)) == "observe"):
                continue
            arg = node.args[0]
            where = f"{f.relative_to(problem_dir)}:{node.lineno}"
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.append((arg.value, False, where))
            elif isinstance(arg, ast.JoinedStr):
                text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in arg.values)
                out.append((text, True, where))
            else:  # a label the ast cannot read: this test would need the reference's run
                pytest.fail(f"{where}: observe() with a computed label {ast.unparse(arg)}")
    return out


@pytest.mark.parametrize("pid", PROBLEMS)
def test_every_label_of_the_problem_has_its_chinese(pid):
    p = load_problem(pid)
    table = p.label_table("zh")
    recorded = _recorded(p.path)
    assert len(recorded) > 50
    missing = [(label, where) for label, pattern, where in recorded
               if not (table.covers_shape(label) if pattern else table.lookup(label) is not None)]
    assert missing == []
    # a translation keeps the code names it quotes (lookup(), free_queue, X[0] ...)
    for label, pattern, _ in recorded:
        if pattern:
            continue
        zh = table.lookup(label)
        for name in ("free_queue", "ref_cnt", "lookup(", "num_offloaded", "hash_to_block"):
            assert (name in label) <= (name in zh), (label, zh)


def test_labels_are_prose_served_and_outside_the_version(tmp_path):
    import shutil

    src = load_problem("141").path
    copy = tmp_path / "problems" / src.name
    shutil.copytree(src, copy)
    shutil.copytree(ROOT / "reference", tmp_path / "reference")
    before = load_problem(copy).version
    (copy / "labels.zh.json").write_text(json.dumps({"counters": "计数器（改过）"}), encoding="utf-8")
    p = load_problem(copy)
    assert p.version == before
    assert p.labels("zh") == {"counters": "计数器（改过）"} and p.labels("en") == {}
    (copy / "labels.zh.json").write_text("[1, 2]", encoding="utf-8")
    from judge.problem import ProblemError
    with pytest.raises(ProblemError):
        load_problem(copy).labels("zh")


def test_the_problem_json_carries_the_labels():
    from fastapi.testclient import TestClient

    from web.app import create_app

    with TestClient(create_app()) as client:
        body = client.get("/api/problems/143").json()
    assert body["labels"]["zh"]["lookup(Y + a new block) returns"] == "lookup(Y + 一个新块) 的返回值"


def test_judge_check_warns_of_a_label_without_chinese():
    p = load_problem("142")
    res = CheckResult(name=p.name)
    _label_checks(p, ["lookup(A) returns", "step 2: num_queries, num_hits", "a label nobody wrote"], res)
    assert res.errors == []
    assert len(res.warnings) == 1 and "'a label nobody wrote'" in res.warnings[0]


def _report(label):
    return {"verdict": "WA", "score": 0.0, "tests": [
        {"name": "public/test_basic.py::test_x", "suite": "public", "verdict": "WA", "time_s": 0.1}],
        "first_failure": {"test": "public/test_basic.py::test_x", "verdict": "WA", "kind": "observation",
                          "label": label, "expected": [1], "got": [2], "path": "[0]"}}


@pytest.mark.parametrize("lang,shown", [("zh", "lookup(Y + 一个新块) 的返回值"),
                                        ("en", "lookup(Y + a new block) returns")])
def test_the_cli_report_names_the_observation_in_its_language(lang, shown):
    out = io.StringIO()
    print_report(Console(lang, stream=out, color=False), _report("lookup(Y + a new block) returns"),
                 labels=load_problem("143").labels("zh") if lang == "zh" else None)
    line = next(x for x in out.getvalue().splitlines() if shown in x)
    assert line.strip().endswith(shown)
