"""`new_problem(id, slug, root)`: a new problem folder with a trivial worked example (a running
sum), laid out so `judge check` accepts it once the reference solution is written. A C++ one
(`language="cpp"`, judge/authoring/scaffold_cpp.py) comes with its reference written.

    <root>/<NNN>-<slug>/      problem.toml, statements, starter, public + hidden tests,
                              submissions/accepted/, submissions/wrong_answer/<one>.py
    <root>/../reference/<module>.py   the reference solution: a stub to fill in
"""

from __future__ import annotations

import re
from pathlib import Path

from judge.problem import ProblemError, list_problems, problems_root

TOML = '''id = "{id}"
slug = "{slug}"
difficulty = "easy"                 # easy | medium | hard
chapter = ""
tags = []
requires = []                       # torch, cuda: what the hidden suite needs
browser = true                      # the public suite runs in the browser (no torch)
draft = true                        # staff only until `judge check` passes (or publish it)

[title]
en = "{title}"
zh = "{title}"

[submission]
module = "{module}"

[handbook]
modules = []                        # handbook modules the solution may import

[reference]
path = "reference/{module}.py"

[limits]
wall_s = 60
cpu_s = 60
memory_mb = 1024
output_kb = 64
time_factor = 4.0
min_test_s = 3.0
'''

STATEMENT_EN = '''# {title}

Write `running_sum(xs)` in `{module}.py`: it returns the list of prefix sums of `xs`
(`running_sum([1, 2, 3]) == [1, 3, 6]`; an empty list gives an empty list).
'''

STATEMENT_ZH = '''# {title}

在 `{module}.py` 中实现 `running_sum(xs)`：返回 `xs` 的前缀和列表
（`running_sum([1, 2, 3]) == [1, 3, 6]`；空列表返回空列表）。
'''

STARTER = '''def running_sum(xs: list[int]) -> list[int]:
    raise NotImplementedError
'''

REFERENCE_STUB = '''"""Reference solution to problem {id} ({slug}). Never mounted in a sandbox."""


def running_sum(xs: list[int]) -> list[int]:
    raise NotImplementedError("write the reference solution")
'''

REFERENCE_EXAMPLE = '''def running_sum(xs: list[int]) -> list[int]:
    out, total = [], 0
    for x in xs:
        total += x
        out.append(total)
    return out
'''

PUBLIC_TEST = '''from {module} import running_sum


def test_example_small(observe):
    observe("running_sum([1, 2, 3])", running_sum([1, 2, 3]))


def test_negative_numbers(observe):
    observe("running_sum([5, -2, -3])", running_sum([5, -2, -3]))
'''

HIDDEN_TEST = '''from {module} import running_sum


def test_empty(observe):
    observe("running_sum([])", running_sum([]))


def test_long(observe):
    xs = list(range(-50, 50, 3))
    observe("running sum of a long list", running_sum(xs))
'''

WRONG = '''# expect: WA
# caught-by: hidden/test_hidden.py::test_empty
# Forgets that an empty list has no sums.
def running_sum(xs):
    out, total = [], 0
    for x in xs:
        total += x
        out.append(total)
    return out or [0]
'''


def module_name(slug: str) -> str:
    name = re.sub(r"\W", "_", slug.replace("-", "_"))
    return name if name.isidentifier() and not name[0].isdigit() else f"p_{name}"


def new_problem(id: str | int, slug: str, root=None, *, title: str | None = None,
                language: str = "python") -> Path:
    """Creates the folder; returns its path. Raises ProblemError if it cannot. `language`:
    "python" (the reference a stub to fill in, beside the bank) or "cpp" (a C++ problem
    that `judge check` proves as it is: judge/authoring/scaffold_cpp.py)."""
    if language not in ("python", "cpp"):
        raise ProblemError(f"a new problem is in python or cpp, not {language!r}")
    root, pid, folder = _free_folder(id, slug, root)
    fields = {"id": pid, "slug": slug, "title": title or slug.replace("-", " ").capitalize()}
    if language == "cpp":
        from judge.authoring import scaffold_cpp
        fields["reference"] = f"{root.resolve().name}/{folder.name}/reference/solution.cpp"
        _write(folder, scaffold_cpp.files(fields))
        return folder
    module = fields["module"] = module_name(slug)
    reference = root.resolve().parent / "reference" / f"{module}.py"
    if reference.exists():
        raise ProblemError(f"{reference} already exists: choose another slug")
    files = {
        "problem.toml": TOML, "statement.en.md": STATEMENT_EN, "statement.zh.md": STATEMENT_ZH,
        f"starter/{module}.py": STARTER, "tests/public/test_public.py": PUBLIC_TEST,
        "tests/hidden/test_hidden.py": HIDDEN_TEST,
        "submissions/wrong_answer/empty_gives_zero.py": WRONG,
    }
    _write(folder, {rel: text.format(**fields) for rel, text in files.items()})
    (folder / "submissions" / "accepted").mkdir(parents=True, exist_ok=True)
    (folder / "submissions" / "accepted" / ".gitkeep").write_text("")
    reference.parent.mkdir(parents=True, exist_ok=True)
    reference.write_text(REFERENCE_STUB.format(**fields), encoding="utf-8")
    return folder


def _free_folder(id: str | int, slug: str, root) -> tuple[Path, str, Path]:
    """(the bank, the id as 3 digits, the new folder), once nothing uses the number or slug."""
    text = str(id)
    if not text.isdigit():
        raise ProblemError(f"problem id must be a number, not {text!r}")
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", slug):
        raise ProblemError(f"slug must be lowercase words joined by '-', not {slug!r}")
    root = problems_root(root)
    pid = f"{int(text):03d}"
    folder = root / f"{pid}-{slug}"
    if folder.exists():
        raise ProblemError(f"{folder} already exists")
    for p in list_problems(root, strict=False):
        if p.number == int(text) or p.slug == slug:
            raise ProblemError(f"{p.path} already uses number {p.id} or slug {p.slug!r}")
    return root, pid, folder


def _write(folder: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
