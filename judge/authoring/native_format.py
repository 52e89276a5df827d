"""The handbook's C++ and CUDA C++ problems, for `judge import` (importer.py): reading one
from a folder and writing it as a problem of this bank.

    practice/problems/cpp/<slug>/     problem.md  starter.cpp  solution.cpp  test.cpp
    practice/problems/cuda/<slug>/    problem.md  starter.py ... test.py   (the Python half)
                                                  starter.cu  solution.cu  test.cu

A folder with both halves gives two problems: its Python one (handbook_format.py) and, beside
it, `<slug>-cuda` (or `-cpp`). A problem of this bank written from one:

    problem.toml         language "cpp" or "cuda", [native] sanitize (problem.md's
                         `sanitize:`), module "user": the student's file is user.cpp (.cu)
    statement.*.md  explanation.zh.md        as for a Python problem
    starter/user.cpp     reference/solution.cpp (never mounted, never served)
    tests/hidden/test.cpp                    the test as it is: never served to students; its
                                             example* cases are the public tests (Run)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from judge.authoring.import_guard import read_text
from judge.problem.cpp_lexer import LexError, case_names, tokens

TRIOS = {"cpp": ("starter.cpp", "solution.cpp", "test.cpp"),
         "cuda": ("starter.cu", "solution.cu", "test.cu")}
SLUG_SUFFIX = {"cpp": "-cpp", "cuda": "-cuda"}
SANITIZE = {"address": "address,undefined", "address,undefined": "address,undefined",
            "asan": "address,undefined", "undefined": "address,undefined",
            "thread": "thread", "tsan": "thread", "none": "none", "off": "none",
            "false": "none"}
LIMITS = (60, 60, 2048, 256, 5.0)   # wall_s, cpu_s, memory_mb (ASan's shadow), output_kb, min_test_s
CHANGES = ("problem.md split into this statement and an explanation shown after an accepted "
           "submission; test.cpp kept whole and never shown (its example* cases are the "
           "public tests), compiled with this judge's own harness in place of the handbook's "
           "judge.hpp")


@dataclass
class NativeProblem:
    folder: Path
    book: str
    slug: str
    language: str               # "cpp" | "cuda"
    title: str
    chapter: str
    difficulty: str
    tags: list[str]
    sanitize: str
    description: str
    explanation: str | None
    starter: str
    solution: str
    tests: str
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.book}/{self.slug}"

    @property
    def suffix(self) -> str:
        return ".cu" if self.language == "cuda" else ".cpp"


def complete_halves(folder: Path) -> list[str]:
    """The native languages whose three files the folder has."""
    return [lang for lang, files in TRIOS.items() if all((folder / f).is_file() for f in files)]


def read_native(folder: Path, language: str, meta: dict, description: str,
                explanation: str | None, slug: str, *, beside_python: bool) -> NativeProblem:
    """`meta`: problem.md's front matter, already read and checked by handbook_format."""
    from judge.authoring.handbook_format import Refused

    texts = {}
    for name in TRIOS[language]:
        try:
            texts[name] = read_text(folder / name)
        except UnicodeDecodeError:
            raise Refused(f"{name} is not UTF-8 text") from None
    test_name = TRIOS[language][2]
    try:
        tokens(texts[test_name])
    except LexError as e:
        raise Refused(f"{test_name}: {e}") from None
    user = f"user{'.cu' if language == 'cuda' else '.cpp'}"
    if not re.search(rf'#\s*include\s*"{re.escape(user)}"', texts[test_name]):
        raise Refused(f'{test_name} does not #include "{user}", where the student\'s code goes')
    cases = case_names(texts[test_name])
    if not cases:
        raise Refused(f"{test_name}: no case found (main() runs none by a name of its own)")
    notes = [] if any(n.startswith("example") for n, _ in cases) else [
        f"{test_name} names no case example*: its first case, {cases[0][0]!r}, is the public one"]
    raw = str(meta.get("sanitize", "address,undefined")).strip().lower()
    if raw not in SANITIZE:
        raise Refused(f"problem.md: sanitize {raw!r} is not one of address, thread, none")
    full = slug + SLUG_SUFFIX[language] if beside_python else slug
    return NativeProblem(folder, folder.parent.name, full, language, meta["title"].strip(),
                         meta["chapter"].strip(), meta["difficulty"], list(meta.get("tags", [])),
                         SANITIZE[raw], description, explanation, texts[TRIOS[language][0]],
                         texts[TRIOS[language][1]], texts[test_name], notes)


def _s(text: str) -> str:
    import json
    return json.dumps(text, ensure_ascii=False)


def problem_toml(np: NativeProblem, number: int, reference: str, source: dict) -> str:
    lim = LIMITS
    requires = '["cuda"]' if np.language == "cuda" else "[]"
    url = source.get("url", "")
    return f'''# Imported by `judge import` from {source["path"]}: edit the handbook's files and import again.
id = "{number}"
slug = "{np.slug}"
difficulty = "{np.difficulty}"
chapter = {_s(np.chapter)}
tags = [{", ".join(_s(t) for t in np.tags)}]
requires = {requires}
browser = false   # C++: Run sends the example cases to the server
language = "{np.language}"

[title]
en = {_s(np.title)}
zh = {_s(np.title)}

[submission]
module = "user"

[native]
sanitize = "{np.sanitize}"

[reference]
path = {_s(reference)}

[limits]
wall_s = {lim[0]}
cpu_s = {lim[1]}
memory_mb = {lim[2]}
output_kb = {lim[3]}
time_factor = 4.0
min_test_s = {lim[4]}

[source]
format = "handbook"
book = {_s(np.book)}
slug = {_s(np.folder.name)}
path = {_s(source["path"])}
url = {_s(url)}
licence = {_s(source["licence"])}
licence_url = {_s(source["licence_url"])}
attribution = {_s(source["attribution"])}
changes = {_s(CHANGES)}
'''


def files(np: NativeProblem, number: int, reference: str, source: dict,
          statement) -> dict[str, str]:
    """{path in the problem folder: text}; `statement(np, note)` writes a statement."""
    out = {
        "problem.toml": problem_toml(np, number, reference, source),
        "statement.zh.md": statement(np, None),
        "statement.en.md": statement(np, source["en_note"]),
        f"starter/user{np.suffix}": np.starter,
        f"reference/solution{np.suffix}": np.solution,
        f"tests/hidden/test{np.suffix}": np.tests,
    }
    if np.explanation:
        out["explanation.zh.md"] = f"{np.explanation}\n"
    return out
