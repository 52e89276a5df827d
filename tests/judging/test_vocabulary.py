"""Event and verdict names are defined once (judge.judging.vocabulary, judge.judging.verdict); the browser's
copy (web/frontend/src/vocabulary.js) is generated from them and committed equal."""

import ast
import re
from pathlib import Path

from paths import REPO

from judge.judging import python_ast
from judge.judging.verdict import NAMES, Verdict
from judge.judging.vocabulary import STREAM_ORDER, Event, to_javascript

FRONT = REPO / "web" / "frontend" / "src"


def test_the_committed_vocabulary_js_is_the_generated_one():
    assert (FRONT / "vocabulary.js").read_text(encoding="utf-8") == to_javascript(), \
        "run: python -m judge.judging.vocabulary > web/frontend/src/vocabulary.js"


def test_the_front_end_build_writes_it():
    script = (REPO / "scripts" / "build_frontend.sh").read_text()
    assert "-m judge.judging.vocabulary" in script and "vocabulary.js" in script
    assert script.index("judge.judging.vocabulary") < script.index("node build.mjs")


def test_the_page_takes_verdict_names_from_the_vocabulary():
    render = (FRONT / "render.js").read_text(encoding="utf-8")
    assert re.search(r'import \{[^}]*\bVERDICT_NAMES\b[^}]*\} from "./vocabulary.js"', render)
    # no verdict named in the page's own words (the issue: CE worded differently in two tables)
    assert not re.search(r"^\s*(AC|WA|RE|TLE|MLE|OLE|CE|IE|NR|SKIP)\s*:", render, re.M)


def test_every_verdict_has_an_english_name():
    assert set(NAMES) == {v.value for v in Verdict}
    assert all(isinstance(n, str) and n for n in NAMES.values())


def test_events_are_strings_on_the_wire():
    import json
    assert json.dumps({"type": Event.DONE}) == '{"type": "done"}' and f"{Event.QUEUED}" == "queued"
    assert STREAM_ORDER[0] is Event.QUEUED and STREAM_ORDER[-1] is Event.DONE


def _bare_event_strings(path: Path) -> list[int]:
    """Lines where an event name is spelt out as a "type" value or an event row's name."""
    names = {e.value for e in Event}
    tree = python_ast.parse(path.read_text(encoding="utf-8"))
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "type" and \
                        isinstance(v, ast.Constant) and v.value in names:
                    hits.append(node.lineno)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_event":
            hits += [a.lineno for a in node.args
                     if isinstance(a, ast.Constant) and a.value in names]
    return hits


def test_python_code_names_events_through_the_vocabulary():
    files = list((REPO / "web").rglob("*.py")) + list((REPO / "judge").glob("*.py"))
    found = {p.relative_to(REPO).as_posix(): lines for p in files
             if (lines := _bare_event_strings(p))}
    assert found == {}


def test_the_front_end_names_events_through_the_vocabulary():
    """No script switches on, compares with or lists an event name of its own."""
    names = "|".join(e.value for e in Event)
    bare = re.compile(rf'(case\s+|\b(?:t|type|ev\.type)\s*===?\s*|\[\s*)"({names})"')
    found = {p.name: [m.group(0) for m in bare.finditer(p.read_text(encoding="utf-8"))]
             for p in FRONT.glob("*.js") if p.name != "vocabulary.js"}
    assert {k: v for k, v in found.items() if v} == {}
    for name in ("render.js", "follow.js", "submission.js"):
        assert "EVENTS" in (FRONT / name).read_text(encoding="utf-8"), name
