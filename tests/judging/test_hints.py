"""Hints keyed to the first failure (hints.toml, judge/judging/hints.py): the schema, the
matching, the statement anchors they link to, and `judge check`'s proof that every known-wrong
file meets one; the one-line messages for an empty / non-defining / non-UTF-8 file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import REPO

from judge.authoring.check import check_problem
from judge.grading.grader import grade
from judge.judging.hints import heading_anchor, matching_hints, statement_anchors
from judge.problem import ProblemError, load_problem
from judge.problem.config import parse_hints
from web.pages.markdown import render_markdown

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BANK = ("141", "142", "143", "144")

pytestmark = pytest.mark.usefixtures("run_cache")


def _hint(id, **kw):
    return {"id": id, "tests": [], "labels": [], "kind": None, "rule": {"en": "a", "zh": "b"},
            "en": ["one", "two"], "zh": ["一", "二"], **kw}


def test_a_label_says_more_than_a_test():
    hints = [_hint("by-test", tests=["public/t.py::test_a"]),
             _hint("by-label", labels=["keys after x"]),
             _hint("raised", tests=["public/t.py::test_a"], kind="exception")]
    ff = {"test": "public/t.py::test_a", "label": "keys after x", "kind": "observation"}
    got = matching_hints(hints, ff)
    assert [h["id"] for h in got] == ["by-label", "by-test"]
    assert got[0]["matched"] == "label" and got[0]["levels"] == {"en": ["one", "two"], "zh": ["一", "二"]}
    raised = matching_hints(hints, {"test": "public/t.py::test_a", "label": None, "kind": "exception"})
    assert [h["id"] for h in raised] == ["by-test", "raised"]
    assert matching_hints(hints, {"test": "public/t.py::test_b", "label": "other"}) == []
    assert matching_hints(hints, None) == [] and matching_hints([], ff) == []


def test_anchors_are_the_ids_the_page_gives_the_headings():
    text = "# Title\n\n## Why\n\n### `lookup(token_ids)`: find, then reload\n\n## 评测方式\n"
    anchors = statement_anchors(text)
    assert anchors == ["why", "lookup-token_ids-find-then-reload", "评测方式"]
    html = render_markdown(text)
    for a in anchors:
        assert f'id="{a}"' in html
    assert heading_anchor("  A  b!! c ") == "a-b-c"


@pytest.mark.parametrize("pid", BANK)
def test_the_bank_hints_are_valid_and_point_at_headings(pid):
    p = load_problem(pid)
    assert p.hints, f"{pid} has no hints"
    names = {t.name for t in p.tests()}
    for lang in ("en", "zh"):
        anchors = statement_anchors(p.statement(lang))
        for h in p.hints:
            assert h["rule"][lang] in anchors, (h["id"], lang)
            assert set(h["tests"]) <= names, h["id"]
            assert len(h[lang]) >= 2  # "a hint", then a more specific one
    # hints are prose: editing them does not change the problem's version
    assert not any(label.endswith("hints.toml") for label, _ in p._hashed_files())


def test_a_bad_hints_file_names_its_field(tmp_path):
    path = tmp_path / "hints.toml"
    path.write_text('[[hint]]\nid = "x"\nrule = { en = "a", zh = "b" }\nen = ["1"]\nzh = ["1", "2"]\n')
    with pytest.raises(ProblemError, match="hints.toml"):
        parse_hints(path)  # no tests or labels, and 1 level in en against 2 in zh
    assert parse_hints(tmp_path / "none.toml") == []


def _bank_copy(tmp_path) -> Path:
    shutil.copytree(FIXTURES / "problems", tmp_path / "problems")
    shutil.copytree(FIXTURES / "reference", tmp_path / "reference")
    folder = tmp_path / "problems" / "001-lru-cache"
    for lang, head in (("en", "## Eviction\n\nThe least recently used key goes.\n"),
                       ("zh", "## 淘汰\n\n最久未使用的键被淘汰。\n")):
        with open(folder / f"statement.{lang}.md", "a", encoding="utf-8") as f:
            f.write("\n" + head)
    return folder


def _hints_toml(entries) -> str:
    out = []
    for i, (key, value, kind) in enumerate(entries):
        out.append(f'[[hint]]\nid = "h{i}"\n{key} = [{json.dumps(value)}]\n'
                   + (f'kind = "{kind}"\n' if kind == "exception" else "")
                   + 'rule = { en = "eviction", zh = "淘汰" }\n'
                   'en = ["vague", "specific"]\nzh = ["模糊", "具体"]\n')
    return "\n".join(out)


def test_judge_check_proves_every_wrong_file_meets_a_hint(tmp_path):
    folder = _bank_copy(tmp_path)
    p = load_problem(folder)
    firsts = {path.name: grade(p, path.read_text(), device="cpu").first_failure
              for path in p.submissions("wrong_answer")}
    left_out = "fifo.py"
    keys = {(f["test"], f.get("label")) for n, f in firsts.items() if n != left_out}
    assert (firsts[left_out]["test"], firsts[left_out].get("label")) not in keys
    entries = [("labels", f["label"], None) if f.get("label") else ("tests", f["test"], f["kind"])
               for n, f in firsts.items() if n != left_out]
    (folder / "hints.toml").write_text(_hints_toml(entries), encoding="utf-8")
    res = check_problem(folder)
    rows = {s.label: s for s in res.submissions}
    assert not res.ok
    assert any("meets no hint" in m for m in rows[f"wrong_answer/{left_out}"].problems)
    for name in firsts:
        if name != left_out:
            assert rows[f"wrong_answer/{name}"].ok and rows[f"wrong_answer/{name}"].hints, name
    # the one left out gets its own hint: now check passes
    f = firsts[left_out]
    entries.append(("labels", f["label"], None) if f.get("label") else ("tests", f["test"], f["kind"]))
    (folder / "hints.toml").write_text(_hints_toml(entries), encoding="utf-8")
    res = check_problem(folder)
    assert res.ok, (res.errors, [(s.label, s.problems) for s in res.submissions])
    assert all(s.hints for s in res.submissions if s.label.startswith("wrong_answer/"))


def test_judge_check_refuses_a_hint_about_no_heading_or_no_test(tmp_path):
    folder = _bank_copy(tmp_path)
    (folder / "hints.toml").write_text(
        '[[hint]]\nid = "x"\ntests = ["public/test_basic.py::test_nope"]\n'
        'rule = { en = "no-such-heading", zh = "淘汰" }\nen = ["a"]\nzh = ["甲"]\n', encoding="utf-8")
    res = check_problem(folder)
    assert any("is not a test of this problem" in e for e in res.errors), res.errors
    assert any("rule.en = 'no-such-heading' is no heading" in e for e in res.errors), res.errors
    assert not res.submissions  # nothing graded against an invalid hints file


def test_reports_carry_the_hints_their_first_failure_meets(tmp_path):
    folder = _bank_copy(tmp_path)
    p = load_problem(folder)
    wrong = p.path / "submissions" / "wrong_answer" / "fifo.py"
    ff = grade(p, wrong.read_text(), device="cpu").first_failure
    (folder / "hints.toml").write_text(_hints_toml([("tests", ff["test"], None)]), encoding="utf-8")
    p = load_problem(folder)
    report = grade(p, wrong.read_text(), device="cpu").to_dict()
    assert [h["id"] for h in report["hints"]] == ["h0"]
    assert report["hints"][0]["levels"]["zh"] == ["模糊", "具体"]
    ok = grade(p, (p.path / "submissions/accepted/plain_dict.py").read_text(), device="cpu")
    assert ok.to_dict()["hints"] == []


def test_a_file_without_the_class_is_said_in_one_line(tmp_path):
    p = load_problem(FIXTURES / "problems" / "001-lru-cache")
    report = grade(p, "x = 1\n", device="cpu").to_dict()
    assert report["verdict"] == "CE"
    assert report["compile_error"]["message"] == "the file does not define LRUCache"
    assert report["compile_error"]["exc_type"] == "ImportError"


@pytest.mark.parametrize("lang,words", [("en", "is not UTF-8 text"), ("zh", "不是 UTF-8 文本")])
def test_practice_judge_says_a_non_utf8_file_in_one_line(tmp_path, lang, words):
    bad = tmp_path / "latin1.py"
    bad.write_bytes("# caf\xe9\nx = 1\n".encode("latin-1"))
    r = subprocess.run([sys.executable, str(REPO / "practice" / "judge.py"), "test", "141", str(bad),
                        "--lang", lang], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in r.stderr, r.stderr
    empty = tmp_path / "empty.py"
    empty.write_text("\n")
    r = subprocess.run([sys.executable, str(REPO / "practice" / "judge.py"), "test", "141", str(empty),
                        "--lang", lang], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
