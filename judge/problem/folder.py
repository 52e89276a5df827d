"""One problem folder: its files located, its tests discovered, its content version computed.

    problems/143-tiered-kv-cache/
      problem.toml  statement.en.md  statement.zh.md  [hints.toml  labels.zh.json]  starter/<module>.py
      tests/public/test_*.py  tests/hidden/test_*.py  submissions/{accepted,wrong_answer}/*.py

Paths in `problem.toml` (`[reference] path`) and the handbook modules (`<base>/reference/<name>.py`)
are relative to the problem's *base*: the folder above the one that holds the problem folders
(the repository root for `problems/...`; `tests/fixtures` for `tests/fixtures/problems/...`).
The same object serves the grading core, the command lines and the web pages.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from judge.judging import python_ast
from judge.problem.config import LANGS, LimitsConfig, ProblemConfig, ProblemError, parse_hints
from judge.problem.cpp_lexer import case_names

REPO_ROOT = Path(__file__).resolve().parents[2]
SUITES = ("public", "hidden")
# .judge-check.json: the last `judge check` (judge.authoring.proof), a record, not the problem
_SKIP_NAMES = {"__pycache__", ".pytest_cache", ".DS_Store", ".judge-check.json"}
# Prose only: editing it changes no verdict, so it leaves the version (and the reference cache).
_PROSE = ("statement.", "explanation.", "hints.", "labels.")
# What the page's runner may be given from the public suite.
_PAGE_SUFFIXES = (".py", ".json", ".txt")
# The student's file, by the problem's language; a C++ problem's one test file (hidden: it
# holds every case's code, examples and all; its example* cases are the public tests).
SUFFIXES = {"python": ".py", "cpp": ".cpp", "cuda": ".cu"}
NATIVE_TEST = {"cpp": "test.cpp", "cuda": "test.cu"}


# ---- tests --------------------------------------------------------------------------------

@dataclass(frozen=True)
class TestInfo:
    __test__ = False  # not a pytest test class

    name: str          # "public/test_lru.py::test_get"
    suite: str         # "public" | "hidden"
    file: str          # "test_lru.py" (relative to the suite dir)
    function: str      # "test_get" (or "TestX::test_get")
    line: int
    parametrized: bool
    weight: float

    @property
    def example(self) -> bool:
        if self.file in NATIVE_TEST.values():  # a C++ test's public cases are its examples
            return self.suite == "public"
        return self.function.rsplit("::", 1)[-1].startswith("test_example")

    @property
    def node(self) -> str:
        """The name inside its suite, as the runner reports it."""
        return f"{self.file}::{self.function}"


def _is_parametrized(fn: ast.AST) -> bool:
    return any("parametrize" in ast.unparse(d) for d in getattr(fn, "decorator_list", []))


def discover_file(path: Path) -> list[tuple[str, int, bool]]:
    """(function, line, parametrized) of every test in a file, in file order, without importing."""
    try:
        tree = python_ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as e:
        raise ProblemError(f"{path}: line {e.lineno}: {e.msg}") from None
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.name.startswith("test_"):
            found.append((node.name, node.lineno, _is_parametrized(node)))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        sub.name.startswith("test_"):
                    found.append((f"{node.name}::{sub.name}", sub.lineno,
                                  _is_parametrized(sub) or _is_parametrized(node)))
    return found


# ---- the problem --------------------------------------------------------------------------

class Problem:
    """One problem folder. Cheap to build; the test list and the version are computed lazily
    (once per object: a `ProblemBank` builds new objects on every lookup, so edits show)."""

    def __init__(self, path: Path, config: ProblemConfig, handbook_dir: Path | None = None):
        self.path = path.resolve()
        self.config = config
        self.base = self.path.parent.parent
        # Where the handbook modules are; `judge serve --reference DIR` moves them.
        self.handbook_dir = Path(handbook_dir) if handbook_dir else self.base / "reference"

    def __repr__(self) -> str:
        return f"<Problem {self.name}>"

    # identity
    @property
    def id(self) -> str:
        return self.config.id

    @property
    def slug(self) -> str:
        return self.config.slug

    @property
    def number(self) -> int:
        return int(self.config.id)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def key(self) -> str:
        return f"{self.id}-{self.slug}"

    @property
    def titles(self) -> dict[str, str]:
        return {"en": self.config.title.en, "zh": self.config.title.zh}

    def title(self, lang: str = "en") -> str:
        return self.titles.get(lang) or self.titles["en"]

    @property
    def difficulty(self) -> str:
        return self.config.difficulty

    @property
    def module(self) -> str:
        return self.config.submission.module

    @property
    def language(self) -> str:
        """"python", "cpp" or "cuda": how a submission is built and run."""
        return self.config.language

    @property
    def suffix(self) -> str:
        return SUFFIXES[self.config.language]

    @property
    def submission_file(self) -> str:
        """The student's file name: `tiered.py`, `user.cpp`."""
        return f"{self.module}{self.suffix}"

    @property
    def native_test_path(self) -> Path | None:
        """A C++/CUDA problem's test file (never served to students); None for Python."""
        name = NATIVE_TEST.get(self.config.language)
        return self.suite_dir("hidden") / name if name else None

    @property
    def limits(self) -> LimitsConfig:
        return self.config.limits

    @property
    def chapter(self) -> str:
        return self.config.chapter

    @property
    def tags(self) -> list[str]:
        return list(self.config.tags)

    @property
    def requires(self) -> list[str]:
        return list(self.config.requires)

    @property
    def browser(self) -> bool:
        """Whether the public suite runs in the page (Pyodide)."""
        return self.config.browser

    @property
    def weights(self) -> dict[str, float]:
        return dict(self.config.weights)

    @property
    def source(self) -> dict:
        """Where an imported problem's text comes from ({} for the project's own problems)."""
        return self.config.source.model_dump() if self.config.source else {}

    @cached_property
    def hints(self) -> list[dict]:
        """hints.toml's hints as plain dicts (judge.judging.hints matches them to a failure)."""
        return [h.model_dump(mode="json") for h in parse_hints(self.path / "hints.toml")]

    def labels_path(self, lang: str = "zh") -> Path:
        return self.path / f"labels.{lang}.json"

    def labels(self, lang: str = "zh") -> dict[str, str]:
        """labels.<lang>.json: the tests' observation labels, English -> `lang` ({} without
        one, and for English). Prose like the statements: not part of the version."""
        path = self.labels_path(lang)
        if lang == "en" or not path.is_file():
            return {}
        try:
            table = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ProblemError(f"{path}: not a JSON table of labels: {e}") from None
        if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in table.items()):
            raise ProblemError(f"{path}: must map each English label to its text (strings)")
        return table

    def label_table(self, lang: str = "zh"):
        """`labels(lang)` ready for lookups (judge.judging.labels.LabelTable)."""
        from judge.judging.labels import LabelTable
        return LabelTable(self.labels(lang))

    def summary(self) -> dict:
        """What a list of problems shows (the web API's `GET /api/problems`)."""
        return {"id": self.id, "slug": self.slug, "title": self.titles,
                "difficulty": self.difficulty, "chapter": self.chapter, "tags": self.tags,
                "requires": self.requires, "browser": self.browser}

    def runs_on(self) -> list[str]:
        """Where it can run: "browser" (public suite, Pyodide), "cpu", "gpu"."""
        where = ["browser"] if self.config.browser else []
        if "cuda" not in self.config.requires:
            where.append("cpu")
        return where + ["gpu"]

    # files
    def statement_path(self, lang: str = "en") -> Path:
        return self.path / f"statement.{lang}.md"

    def languages(self) -> list[str]:
        """The languages the statement is written in."""
        return [lang for lang in LANGS if self.statement_path(lang).is_file()]

    def statement(self, lang: str = "en") -> str:
        """In `lang`, else English, else Chinese; "" when there is none."""
        for candidate in (lang, "en", "zh"):
            if self.statement_path(candidate).is_file():
                return self.statement_path(candidate).read_text(encoding="utf-8")
        return ""

    def explanation(self, lang: str = "zh") -> str | None:
        """The worked explanation (imported problems), meant for after an accepted submission."""
        for candidate in (lang, "zh", "en"):
            path = self.path / f"explanation.{candidate}.md"
            if path.is_file():
                return path.read_text(encoding="utf-8")
        return None

    @property
    def starter_path(self) -> Path:
        return self.path / "starter" / self.submission_file

    @property
    def starter_source(self) -> str:
        """The starter file, else the first file of starter/ (a page needs something), else ""."""
        if self.starter_path.is_file():
            return self.starter_path.read_text(encoding="utf-8")
        files = sorted((self.path / "starter").glob(f"*{self.suffix}"))
        return files[0].read_text(encoding="utf-8") if files else ""

    @property
    def reference_path(self) -> Path:
        return (self.base / self.config.reference.path).resolve()

    @property
    def handbook_paths(self) -> list[Path]:
        """The handbook modules the problem mounts, as files (`x.py`) or packages (`x/`)."""
        out = []
        root = self.handbook_dir.resolve()
        for name in self.config.handbook.modules:
            file, pkg = self.handbook_dir / f"{name}.py", self.handbook_dir / name
            if file.is_file():
                found = file
            elif (pkg / "__init__.py").is_file():
                found = pkg
            else:
                raise ProblemError(f"{self.path / 'problem.toml'}: field `handbook.modules`: "
                                   f"no module {name!r} in {self.handbook_dir}")
            # a link in the handbook folder must not mount (and serve) a file from elsewhere
            if not found.resolve().is_relative_to(root):
                raise ProblemError(f"{self.path / 'problem.toml'}: field `handbook.modules`: "
                                   f"{name!r} resolves outside {self.handbook_dir}")
            out.append(found)
        return out

    def handbook_sources(self) -> dict[str, str]:
        """The flat handbook modules a solution may import, by module name, for the page's
        runner: never the module being written, never the reference solution."""
        ref = self.reference_path.name
        return {p.stem: p.read_text(encoding="utf-8") for p in self.handbook_paths
                if p.is_file() and p.stem != self.module and p.name != ref}

    def public_files(self) -> dict[str, str]:
        """{"public/test_x.py": text, "public/helper.py": text}: what the page's runner runs."""
        tests = self.path / "tests"
        return {p.relative_to(tests).as_posix(): p.read_text(encoding="utf-8")
                for p in _walk(self.suite_dir("public")) if p.suffix in _PAGE_SUFFIXES}

    def suite_dir(self, suite: str) -> Path:
        return self.path / "tests" / suite

    def test_files(self, suite: str) -> list[Path]:
        if self.native_test_path is not None:
            return [self.native_test_path] if suite == "hidden" and \
                self.native_test_path.is_file() else []
        d = self.suite_dir(suite)
        return sorted(d.glob("test_*.py")) if d.is_dir() else []

    def submissions(self, kind: str) -> list[Path]:
        d = self.path / "submissions" / kind
        return sorted(d.glob(f"*{self.suffix}")) if d.is_dir() else []

    # tests
    @cached_property
    def _tests(self) -> dict[str, list[TestInfo]]:
        if self.native_test_path is not None:
            return self._native_tests()
        out: dict[str, list[TestInfo]] = {}
        for suite in SUITES:
            out[suite] = []
            for f in self.test_files(suite):
                for func, line, param in discover_file(f):
                    name = f"{suite}/{f.name}::{func}"
                    out[suite].append(TestInfo(name, suite, f.name, func, line, param,
                                               float(self.config.weights.get(name, 1))))
        return out

    def _native_tests(self) -> dict[str, list[TestInfo]]:
        """A C++ test's cases, by the names its main() passes (cpp_lexer.case_names): the
        example* ones are public (the first case where none is named so), the rest hidden.
        Named `public/test.cpp::<case>`: the file itself stays in tests/hidden."""
        path = self.native_test_path
        out: dict[str, list[TestInfo]] = {"public": [], "hidden": []}
        if path is None:
            return out
        found = case_names(path.read_text(encoding="utf-8")) if path.is_file() else []
        public = {n for n, _ in found if n.startswith("example")} or \
            {n for n, _ in found[:1]}
        for case, line in found:
            suite = "public" if case in public else "hidden"
            name = f"{suite}/{path.name}::{case}"
            out[suite].append(TestInfo(name, suite, path.name, case, line, False,
                                       float(self.config.weights.get(name, 1))))
        return out

    def native_suite_of(self, case: str) -> str:
        """Which suite a case the reference's run reported is in (its name alone says)."""
        names = {t.function for t in self._tests["public"]}
        return "public" if case in names or (not names and case.startswith("example")) \
            else "hidden"

    def tests(self, suite: str = "all") -> list[TestInfo]:
        if suite == "all":
            return [t for s in SUITES for t in self._tests[s]]
        return list(self._tests[suite])

    def examples(self) -> list[TestInfo]:
        return [t for t in self.tests() if t.example]

    def weight(self, name: str) -> float:
        w = self.config.weights.get(name)
        if w is None and "[" in name:
            w = self.config.weights.get(name.split("[", 1)[0])
        return float(w if w is not None else 1)

    # version
    def _hashed_files(self) -> list[tuple[str, Path]]:
        files = [(f"problem/{p.relative_to(self.path).as_posix()}", p) for p in _walk(self.path)
                 if not (p.parent == self.path and p.name.startswith(_PROSE))]
        files.append((f"reference/{self.reference_path.name}", self.reference_path))
        for h in self.handbook_paths:
            if h.is_dir():
                files += [(f"handbook/{h.name}/{p.relative_to(h).as_posix()}", p) for p in _walk(h)]
            else:
                files.append((f"handbook/{h.name}", h))
        return sorted(files)

    @cached_property
    def version(self) -> str:
        """sha256 over what can change a verdict: the folder's files (its statements and
        explanations aside), the reference solution and the handbook modules. Reports carry it,
        the reference cache is keyed by it, and a remote worker grades only when its version
        equals the server's."""
        if not self.reference_path.is_file():
            raise ProblemError(f"{self.path / 'problem.toml'}: field `reference.path`: "
                               f"{self.reference_path} does not exist")
        h = hashlib.sha256()
        for label, path in self._hashed_files():
            h.update(label.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
        return h.hexdigest()


def _walk(folder: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_NAMES and not d.startswith("."))
        out += [Path(dirpath) / f for f in sorted(filenames)
                if f not in _SKIP_NAMES and not f.endswith(".pyc")]
    return out


