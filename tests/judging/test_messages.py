"""One table of words per language (judge/messages): every text the command lines, the pages
and the browser translate is in it, and no other table of Chinese words is left in the code."""

import ast
import re
import subprocess
from pathlib import Path

from paths import REPO

from judge.judging import python_ast
from judge.judging.verdict import NAMES, Verdict
from judge.messages import table, translate, verdict_name

ZH = table("zh")
CJK = re.compile("[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
# Texts that read the same in both languages, so the table has no entry for them.
SAME_IN_BOTH = {"Python", "PyTorch", "CPU", "GPU"}


def _placeholders(text: str) -> set[str]:
    return set(re.findall(r"\{(\w+)\}", text))


def test_the_table_loads_and_keeps_placeholders():
    assert len(ZH) > 150
    for en, zh in ZH.items():
        assert zh and zh != en and CJK.search(zh), en
        assert _placeholders(zh) == _placeholders(en), en
    assert table("en") == {} and translate("Verdict", "en") == "Verdict"
    assert translate("step {i} of {n}", "zh", i=2, n=5) == ZH["step {i} of {n}"].format(i=2, n=5)
    assert translate("no such text here", "zh") == "no such text here"


def test_every_verdict_is_named_in_every_language():
    assert set(NAMES) == {v.value for v in Verdict}
    for code, en in NAMES.items():
        assert en in ZH, en
        assert verdict_name(code, "zh") == ZH[en] and verdict_name(code) == en


def _python_texts(path: Path) -> list[str]:
    """First arguments of `con.t(...)`, `self.t(...)`, `translate(...)` that are literals."""
    out = []
    for node in ast.walk(python_ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            if name in ("t", "translate") and isinstance(node.args[0].value, str):
                out.append(node.args[0].value)
    return out


def _quoted(pattern: str, text: str) -> list[str]:
    return [m.encode().decode("unicode_escape").encode("latin-1").decode("utf-8")
            for m in re.findall(pattern, text)]


def _used_texts() -> dict[str, list[str]]:
    used = {}
    for rel in ("judge/cli/console.py", "judge/cli/trace_text.py", "judge/cli/main.py", "practice/judge.py",
                "judge/cli/failure_text.py", "judge/cli/live_text.py", "judge/handout/build.py"):
        used[rel] = _python_texts(REPO / rel)
    for path in sorted((REPO / "web" / "templates").glob("*.html")):
        text = path.read_text(encoding="utf-8")
        used[path.name] = _quoted(r'_\("((?:[^"\\]|\\.)*)"', text) + \
            re.findall(r'data-i18n="([^"]*)"', text)
    for path in sorted((REPO / "web" / "frontend" / "src").glob("*.js")):
        text = path.read_text(encoding="utf-8")
        used[path.name] = _quoted(r'\btr\("((?:[^"\\]|\\.)*)"', text)
    return used


def test_every_text_the_front_ends_translate_is_in_the_table():
    used = _used_texts()
    # each front end really goes through the table (a parser that found nothing would pass)
    assert len(used["judge/cli/console.py"]) > 30 and len(used["practice/judge.py"]) > 8
    assert len(used["instructor.html"]) > 30 and len(used["problem.html"]) > 10
    assert len(used["render.js"]) > 10 and len(used["timeline.js"]) > 5
    missing = {(where, text) for where, texts in used.items() for text in texts
               if text not in ZH and text not in SAME_IN_BOTH}
    assert not missing


def test_the_browser_and_the_pages_look_up_the_same_table():
    i18n = (REPO / "web" / "frontend" / "src" / "i18n.js").read_text(encoding="utf-8")
    assert 'from "../../../judge/messages/zh.json"' in i18n
    render = (REPO / "web" / "pages" / "render.py").read_text(encoding="utf-8")  # every page's
    assert "from judge.messages import" in render and '"_": partial(translate' in render


# Chinese in code that is not a table of words: the handbook's file format (its markers and
# difficulty words), the statement a new problem starts with (Python or C++), a comment's
# example, and the language switch's "中文" (a language's own name, the same in every language).
ALLOWED = {"judge/authoring/handbook_format.py", "judge/authoring/importer.py", "judge/authoring/scaffold.py",
           "judge/authoring/scaffold_cpp.py", "web/pages/markdown.py"}
ENDONYM = "中文"
# judge/runner/checker.py is the handbook's `checker` (its practice/runtime/checker.py) written
# here: its default descriptions (what="结果", "这个调用", "这段代码") and the wording of its
# failures are that module's contract, which the handbook's tests and readers see as the handbook
# says them (a test passes its own Chinese `what`; the message is built around it). They are
# these words and no others: any other Chinese in that file is a table to move to zh.json.
HANDBOOK_CHECKER = "judge/runner/checker.py"
HANDBOOK_CHECKER_WORDS = sorted({
    "结果", "这个调用", "这段代码", "空列表", "期望", "实际", "第一个不同在", "或", "容差",
    "应该抛出", "实际抛出了", "但没有抛出任何异常", "用了", "秒，超过限制", "秒：", "算法的复杂度可能太高",
    "浏览器里没有 PyTorch：请在本地运行", "这道题需要 PyTorch：请在本地环境运行",
    "这个用例需要 NVIDIA GPU（例如 WSL2 + CUDA），当前设备是", "形状不对，期望", "有",
    "个元素不对，第一个在下标", "出现了 NaN，第一个在下标", "误差太大，", "个元素超出容差，最大误差",
    "下标", "处期望", "不是数值数组", "：", "，", "；", "（", "）",
}, key=len, reverse=True)


def test_no_other_table_of_chinese_words_is_left_in_the_code():
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, text=True,
                           capture_output=True, check=True).stdout.split()
    offenders = []
    for rel in files:
        if not rel.endswith((".py", ".js", ".mjs", ".html")) or rel in ALLOWED:
            continue
        # problems' own texts and tests' data (here and the front end's node tests) may be Chinese
        if rel.startswith(("problems/", "tests/", "web/frontend/test/")) or "node_modules" in rel:
            continue
        path = REPO / rel
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace").replace(ENDONYM, "")
        if rel == HANDBOOK_CHECKER:
            for word in HANDBOOK_CHECKER_WORDS:
                text = text.replace(word, "")
        if CJK.search(text):
            offenders.append(rel)
    assert offenders == []


def _python_strings(path: Path) -> set[str]:
    """Every string literal (implicit concatenations joined, as Python joins them)."""
    return {n.value for n in ast.walk(python_ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_every_entry_of_the_table_is_used_somewhere():
    """A text no front end says any more is taken out of the table, not left to drift."""
    said = set(NAMES.values())
    for folder, pattern in (("judge", "*.py"), ("practice", "*.py"), ("web", "*.py")):
        for path in (REPO / folder).rglob(pattern):
            if "node_modules" not in path.parts:
                said |= _python_strings(path)
    sources = " ".join(p.read_text(encoding="utf-8") for p in
                       list((REPO / "web" / "frontend" / "src").glob("*.js")) +
                       list((REPO / "web" / "templates").glob("*.html")))
    # line by line: a quote character inside another string ('"') must not shift what is inside
    for line in sources.splitlines():
        said |= set(re.findall(r'"((?:[^"\\]|\\.)*)"', line))
    said |= set(_quoted(r'_\("((?:[^"\\]|\\.)*)"', sources))  # inside attributes' quotes
    assert sorted(k for k in ZH if k not in said) == []
