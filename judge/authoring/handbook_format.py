"""Reading a problem in the handbook's own format, for `judge import` (judge/authoring/importer.py).

    practice/problems/<book>/<slug>/
      problem.md    front matter (title, chapter, difficulty 简单/中等/困难, tags, requires),
                    the description, then optionally `<!-- 题解 -->` and the explanation
      starter.py  solution.py  test.py     (test_example* are the examples)

`read_problem(folder)` returns a `HandbookProblem` or raises `Refused` with a sentence saying
why this judge cannot take it. `split_tests(source)` (judge/authoring/test_split.py) cuts test.py
into the examples and the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from judge.authoring.import_guard import Unsafe, check_problem_tree, is_plain_dir, read_text
from judge.authoring.test_split import Split, example_and_other_tests, split_tests  # noqa: F401
from judge.judging import python_ast

REQUIRED_FILES = ("problem.md", "starter.py", "solution.py", "test.py")
DIFFICULTY = {"简单": "easy", "中等": "medium", "困难": "hard",
              "easy": "easy", "medium": "medium", "hard": "hard"}
KNOWN_KEYS = {"title", "chapter", "difficulty", "tags", "requires"}
# What a problem may need: PyTorch, a CUDA device (from Python), or a local machine (no browser).
RUNTIMES = {"torch", "cuda", "local"}
# A requirement the handbook meets with a runtime module's `install()` rather than a package:
# its judge calls `tritonkit.install()` before importing the solution and the tests when
# "triton" is among a problem's requirements, and `import triton` then finds its simulator
# (minitl) or real Triton. Whether the runtime folder has it is settled by import_runtime.
INSTALLED_BY = {"triton": "tritonkit"}
# What says the problem is written in C++ or CUDA C++, which this judge cannot build or run.
NATIVE_REQUIREMENTS = {"cuda_kernel", "cuda-kernel", "cpp", "c++", "cxx", "cuda_cpp", "nvcc"}
NATIVE_SUFFIXES = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp"}
NATIVE_PYTHON = ("load_inline", "cpp_extension")  # torch building C++ at run time
MARKER = re.compile(r"^\s*<!--\s*题解\s*-->\s*$")
_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:(.*)$")


class Refused(Exception):
    """This folder cannot become a problem of this bank; the message says why."""


class FrontMatterError(ValueError):
    pass


# ---- front matter -------------------------------------------------------------------------

def parse_front_matter(text: str) -> tuple[dict, str]:
    """({key: str | [str]}, the text after it). Only `key: value` and `key: [a, b]` lines (and
    comments) are understood; anything else is an error rather than a guess."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise FrontMatterError("it does not start with a front matter block ('---' on line 1)")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise FrontMatterError("the front matter block is never closed (no second '---' line)")
    data: dict = {}
    for n in range(1, end):
        line = lines[n]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"line {n + 1}"
        if line[0] in " \t-":
            raise FrontMatterError(f"{where}: nested or indented values are not supported: "
                                   f"{line.strip()!r}")
        m = _KEY.match(line)
        if not m:
            raise FrontMatterError(f"{where}: expected `key: value`, got {line.strip()!r}")
        key, raw = m.group(1), m.group(2).strip()
        if key in data:
            raise FrontMatterError(f"{where}: `{key}` is given twice")
        if not raw:
            raise FrontMatterError(f"{where}: `{key}` has no value")
        data[key] = _value(raw, where)
    return data, "\n".join(lines[end + 1:])


def _value(raw: str, where: str):
    if raw.startswith("["):
        raw = re.sub(r"\]\s+#.*$", "]", raw)
        if not raw.endswith("]"):
            raise FrontMatterError(f"{where}: a list must end with ']' on the same line")
        items = _split_items(raw[1:-1], where)
        return [_scalar(item, where) for item in items]
    return _scalar(raw, where)


def _split_items(inner: str, where: str) -> list[str]:
    items, buf, quote = [], "", None
    for ch in inner:
        if quote:
            buf += ch
            quote = None if ch == quote else quote
        elif ch in "\"'":
            buf, quote = buf + ch, ch
        elif ch == ",":
            items.append(buf.strip())
            buf = ""
        elif ch in "[]{}":
            raise FrontMatterError(f"{where}: nested lists or maps are not supported")
        else:
            buf += ch
    if quote:
        raise FrontMatterError(f"{where}: a quoted item is never closed")
    if buf.strip() or items:
        items.append(buf.strip())
    if any(not item for item in items):
        raise FrontMatterError(f"{where}: a list has an empty item")
    return items


def _scalar(raw: str, where: str) -> str:
    if raw[:1] in ("'", '"'):
        q = raw[0]
        if len(raw) < 2 or not raw.endswith(q):
            raise FrontMatterError(f"{where}: the quoted value {raw!r} is not closed")
        return raw[1:-1]
    if raw[:1] in "{&*!|>":
        raise FrontMatterError(f"{where}: {raw!r} is not a plain value")
    return re.split(r"\s+#", raw, maxsplit=1)[0].strip()


def split_explanation(body: str) -> tuple[str, str | None]:
    """(description, explanation after the `<!-- 题解 -->` line, or None)."""
    lines = body.splitlines()
    for i, line in enumerate(lines):
        if MARKER.match(line):
            after = "\n".join(lines[i + 1:]).strip()
            return "\n".join(lines[:i]).strip(), after or None
    return body.strip(), None


# ---- the problem --------------------------------------------------------------------------

@dataclass
class HandbookProblem:
    folder: Path
    book: str
    slug: str
    title: str
    chapter: str
    difficulty: str            # easy | medium | hard
    tags: list[str]
    requires: list[str]        # of RUNTIMES, or Python packages the environment has
    description: str
    explanation: str | None
    starter: str
    solution: str
    tests: str
    extra_files: list[Path] = field(default_factory=list)  # data or helpers test.py reads
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.book}/{self.slug}"


def normalize_slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


PYTHON_FILES = ("starter.py", "solution.py", "test.py")
NATIVE_NEEDS = ("a C++ problem needs starter.cpp, solution.cpp and test.cpp (CUDA C++: .cu), "
                "a Python one starter.py, solution.py and test.py")


def _native_reason(folder: Path, meta: dict | None) -> str | None:
    files = sorted(p.name for p in folder.rglob("*")
                   if p.is_file() and p.suffix.lower() in NATIVE_SUFFIXES)
    mixed = all((folder / f).is_file() for f in PYTHON_FILES)
    if files and not mixed:  # beside a whole Python half, they are its native half's
        return f"it has C++/CUDA sources ({', '.join(files[:3])})"
    if meta:
        needs = [r for r in _as_list(meta.get("requires")) if r.lower() in NATIVE_REQUIREMENTS]
        if needs:
            return f"its front matter requires {', '.join(needs)}"
        lang = str(meta.get("language") or meta.get("lang") or "python").lower()
        if lang not in ("python", "py"):
            return f"its front matter says the language is {lang}"
    for name in ("starter.py", "solution.py", "test.py"):
        p = folder / name
        text = read_text(p) if p.is_file() else ""
        if any(word in text for word in NATIVE_PYTHON):
            return f"{name} compiles C++ at run time (torch.utils.cpp_extension)"
    return None


def _importable(name: str) -> bool:
    """A `requires` entry naming a Python package (numpy, scipy) is met when the grading
    environment (this interpreter: graders start sys.executable) can import it."""
    import importlib.util
    mod = name.replace("-", "_")
    if not mod.isidentifier():
        return False
    try:
        return importlib.util.find_spec(mod) is not None
    except (ImportError, ValueError):
        return False


def _as_list(value) -> list[str]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _checked_meta(meta: dict) -> str:
    """The difficulty (easy | medium | hard) of a front matter whose required keys hold."""
    for key in ("title", "chapter", "difficulty"):
        if not isinstance(meta.get(key), str) or not meta[key].strip():
            raise Refused(f"problem.md: broken front matter: `{key}` is missing or not a text")
    difficulty = DIFFICULTY.get(meta["difficulty"].strip().lower())
    if difficulty is None:
        raise Refused(f"problem.md: broken front matter: difficulty {meta['difficulty']!r} is "
                      "not one of 简单, 中等, 困难")
    for key in ("tags", "requires"):
        if key in meta and not isinstance(meta[key], list):
            raise Refused(f"problem.md: broken front matter: `{key}` must be a list ([a, b])")
    return difficulty


def read_problems(folder: Path) -> tuple[list, list[tuple[str, str]]]:
    """([every problem the folder holds: its Python one (HandbookProblem), each of its whole
    C++ / CUDA C++ halves (native_format.NativeProblem)], [(which half, why refused)]).
    A folder with no whole native half is read as before (read_problem: it may raise)."""
    from judge.authoring.native_format import complete_halves

    folder = Path(folder)
    halves = complete_halves(folder) if is_plain_dir(folder) else []
    if not halves:
        return [read_problem(folder)], []
    python = all((folder / f).is_file() for f in PYTHON_FILES)
    found, refused = [], []
    for half in (["python"] if python else []) + halves:
        try:
            found.append(read_problem(folder) if half == "python" else
                         _read_native_half(folder, half, beside_python=python))
        except Refused as e:
            refused.append((half, str(e)))
    if python and found and isinstance(found[0], HandbookProblem):
        from judge.authoring.native_format import SLUG_SUFFIX
        for half in halves:
            found[0].notes.append(f"its {half} half (the .{'cu' if half == 'cuda' else 'cpp'} "
                                  f"files) is imported beside it, as "
                                  f"{found[0].slug}{SLUG_SUFFIX[half]}")
    return found, refused


NATIVE_KEYS = KNOWN_KEYS | {"sanitize", "lang", "language"}


def _read_native_half(folder: Path, language: str, *, beside_python: bool):
    from judge.authoring.native_format import read_native

    try:
        check_problem_tree(Path(folder))
    except Unsafe as e:
        raise Refused(f"not imported: {e}") from None
    folder = Path(folder).resolve()
    if not (folder / "problem.md").is_file():
        raise Refused("missing problem.md")
    try:
        meta, body = parse_front_matter(read_text(folder / "problem.md"))
    except (FrontMatterError, UnicodeDecodeError) as e:
        raise Refused(f"problem.md: broken front matter: {e}") from None
    difficulty = _checked_meta(meta)
    description, explanation = split_explanation(body)
    if not description:
        raise Refused("problem.md has no description before the explanation marker")
    slug = normalize_slug(folder.name)
    if not slug:
        raise Refused(f"{folder.name!r} gives no usable slug (letters, digits, '-')")
    np = read_native(folder, language, {**meta, "difficulty": difficulty}, description,
                     explanation, slug, beside_python=beside_python)
    np.notes += [f"problem.md: front matter key `{k}` ignored" for k in sorted(set(meta) -
                                                                             NATIVE_KEYS)]
    return np


def read_problem(folder: Path) -> HandbookProblem:
    folder, meta, body = _python_problem_md(folder)
    notes = []
    difficulty = _checked_meta(meta)
    requires = _requires(meta)
    for key in sorted(set(meta) - KNOWN_KEYS):
        notes.append(f"problem.md: front matter key `{key}` ignored")
    slug = normalize_slug(folder.name)
    if not slug:
        raise Refused(f"{folder.name!r} gives no usable slug (letters, digits, '-')")
    description, explanation = split_explanation(body)
    if not description:
        raise Refused("problem.md has no description before the explanation marker")
    sources = _python_sources(folder)
    examples, _ = example_and_other_tests(sources["test.py"])
    if not examples:
        raise Refused("test.py has no test_example* function: there would be no public tests")
    extra = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
                   and p.name not in REQUIRED_FILES and p.suffix in (".py", ".json", ".txt"))
    return HandbookProblem(
        folder=folder, book=folder.parent.name, slug=slug, title=meta["title"].strip(),
        chapter=meta["chapter"].strip(), difficulty=difficulty, tags=list(meta.get("tags", [])),
        requires=requires, description=description, explanation=explanation,
        starter=sources["starter.py"], solution=sources["solution.py"], tests=sources["test.py"],
        extra_files=extra, notes=notes)


def _python_problem_md(folder: Path) -> tuple[Path, dict, str]:
    """(the folder, resolved; problem.md's front matter; its body) of a safe folder holding a
    Python problem's files; a C++/CUDA one, or one with files missing, is Refused."""
    try:  # before resolving: a link to a folder is refused like any other link
        check_problem_tree(Path(folder))
    except Unsafe as e:
        raise Refused(f"not imported: {e}") from None
    folder = Path(folder).resolve()  # "." names a problem too
    if not folder.is_dir():
        raise Refused(f"{folder}: no such folder")
    meta = None
    md = folder / "problem.md"
    if md.is_file():
        try:
            meta, body = parse_front_matter(read_text(md))
        except (FrontMatterError, UnicodeDecodeError) as e:
            native = _native_reason(folder, None)
            if native:
                raise Refused(f"a C++/CUDA problem: {native}; {NATIVE_NEEDS}")
            raise Refused(f"problem.md: broken front matter: {e}") from None
    native = _native_reason(folder, meta)
    if native:
        raise Refused(f"a C++/CUDA problem: {native}; {NATIVE_NEEDS}")
    missing = [f for f in REQUIRED_FILES if not (folder / f).is_file()]
    if missing:
        raise Refused(f"missing {', '.join(missing)}")
    # problem.md is one of REQUIRED_FILES, so it was read (or refused) above
    assert meta is not None
    return folder, meta, body


def _requires(meta: dict) -> list[str]:
    """The front matter's `requires`, each one the grading environment has (else Refused)."""
    requires = [r.lower() for r in meta.get("requires", [])]
    lacking = [r for r in requires if r not in RUNTIMES and r not in INSTALLED_BY
               and not _importable(r)]
    if lacking:
        raise Refused(f"problem.md: requires {', '.join(lacking)}, which the grading "
                      f"environment does not have (no Python module of that name is installed; "
                      f"the runtimes it knows are {', '.join(sorted(RUNTIMES))})")
    return requires


def _python_sources(folder: Path) -> dict[str, str]:
    """{name: text} of starter.py, solution.py and test.py, each UTF-8 that parses."""
    sources = {}
    for name in ("starter.py", "solution.py", "test.py"):
        try:
            text = read_text(folder / name)
        except UnicodeDecodeError:
            raise Refused(f"{name} is not UTF-8 text") from None
        try:
            python_ast.parse(text, filename=name)
        except SyntaxError as e:
            raise Refused(f"{name}: line {e.lineno}: {e.msg}") from None
        sources[name] = text
    return sources
