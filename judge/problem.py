"""A problem folder: `problem.toml` validated, its files located, its tests discovered, its
content hash (the "version") computed.

    problems/143-tiered-kv-cache/
      problem.toml  statement.en.md  statement.zh.md  starter/<module>.py
      tests/public/test_*.py  tests/hidden/test_*.py  submissions/{accepted,wrong_answer}/*.py

Paths in `problem.toml` (`[reference] path`) and the handbook modules (`<base>/reference/<name>.py`)
are relative to the problem's *base*: the folder above the one that holds the problem folders
(the repository root for `problems/...`; `tests/fixtures` for `tests/fixtures/problems/...`).
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

REPO_ROOT = Path(__file__).resolve().parent.parent
SUITES = ("public", "hidden")
LANGS = ("en", "zh")
_SKIP_NAMES = {"__pycache__", ".pytest_cache", ".DS_Store"}


class ProblemError(ValueError):
    """A problem folder is missing or invalid; the message names the file and the field."""


# ---- problem.toml -------------------------------------------------------------------------

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Title(_Strict):
    en: str = Field(min_length=1)
    zh: str = Field(min_length=1)


class SubmissionConfig(_Strict):
    module: str

    @field_validator("module")
    @classmethod
    def _identifier(cls, v: str) -> str:
        if not v.isidentifier():
            raise ValueError(f"{v!r} is not a Python module name")
        return v


class HandbookConfig(_Strict):
    modules: list[str] = []


class ReferenceConfig(_Strict):
    path: str


class SourceConfig(_Strict):
    """Where an imported problem's text comes from (`judge import`), shown on its page."""
    format: Literal["handbook"] = "handbook"
    book: str = ""
    slug: str = ""             # the stable key in the source
    path: str = ""
    url: str = ""
    licence: str = Field(min_length=1)
    licence_url: str = ""
    attribution: str = Field(min_length=1)
    changes: str = ""


class LimitsConfig(_Strict):
    wall_s: float = Field(120, gt=0)
    cpu_s: float = Field(120, gt=0)
    memory_mb: int = Field(3072, gt=0)
    output_kb: int = Field(256, gt=0)
    time_factor: float = Field(4.0, gt=0)
    min_test_s: float = Field(5.0, gt=0)


class CheckConfig(_Strict):
    # `judge check --mutate` fails below this share of killed mutants; 0: it only reports
    mutation_min: float = Field(0.0, ge=0.0, le=1.0)


class ProblemConfig(_Strict):
    id: str = Field(pattern=r"^\d+$")
    slug: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    difficulty: Literal["easy", "medium", "hard"]
    chapter: str = ""
    tags: list[str] = []
    requires: list[Literal["torch", "cuda"]] = []
    browser: bool = False
    title: Title
    submission: SubmissionConfig
    handbook: HandbookConfig = HandbookConfig()
    reference: ReferenceConfig
    limits: LimitsConfig = LimitsConfig()
    weights: dict[str, float] = {}
    check: CheckConfig = CheckConfig()
    source: SourceConfig | None = None

    @field_validator("weights")
    @classmethod
    def _positive(cls, v: dict[str, float]) -> dict[str, float]:
        for name, w in v.items():
            if w <= 0:
                raise ValueError(f"weight of {name!r} must be > 0")
        return v


def parse_config(toml_path: Path) -> ProblemConfig:
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProblemError(f"{toml_path}: file not found") from None
    except tomllib.TOMLDecodeError as e:
        raise ProblemError(f"{toml_path}: not valid TOML: {e}") from None
    try:
        return ProblemConfig.model_validate(data)
    except ValidationError as e:
        lines = [f"{toml_path}: invalid problem.toml"]
        for err in e.errors():
            field = ".".join(str(p) for p in err["loc"]) or "(top level)"
            lines.append(f"  field `{field}`: {err['msg']}")
        raise ProblemError("\n".join(lines)) from None


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
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
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
    """One problem folder. Cheap to build; the test list and the version are computed lazily."""

    def __init__(self, path: Path, config: ProblemConfig):
        self.path = path.resolve()
        self.config = config
        self.base = self.path.parent.parent

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
    def limits(self) -> LimitsConfig:
        return self.config.limits

    def runs_on(self) -> list[str]:
        """Where it can run: "browser" (public suite, Pyodide), "cpu", "gpu"."""
        where = ["browser"] if self.config.browser else []
        if "cuda" not in self.config.requires:
            where.append("cpu")
        return where + ["gpu"]

    # files
    def statement_path(self, lang: str = "en") -> Path:
        return self.path / f"statement.{lang}.md"

    def statement(self, lang: str = "en") -> str:
        path = self.statement_path(lang)
        if not path.is_file():
            path = self.statement_path("en")
        return path.read_text(encoding="utf-8")

    def explanation(self, lang: str = "zh") -> str | None:
        """The worked explanation (imported problems), meant for after an accepted submission."""
        for candidate in (lang, "zh", "en"):
            path = self.path / f"explanation.{candidate}.md"
            if path.is_file():
                return path.read_text(encoding="utf-8")
        return None

    @property
    def starter_path(self) -> Path:
        return self.path / "starter" / f"{self.module}.py"

    @property
    def starter_source(self) -> str:
        return self.starter_path.read_text(encoding="utf-8")

    @property
    def reference_path(self) -> Path:
        return (self.base / self.config.reference.path).resolve()

    @property
    def handbook_paths(self) -> list[Path]:
        """The handbook modules the problem mounts, as files (`x.py`) or packages (`x/`)."""
        out = []
        for name in self.config.handbook.modules:
            file, pkg = self.base / "reference" / f"{name}.py", self.base / "reference" / name
            if file.is_file():
                out.append(file)
            elif (pkg / "__init__.py").is_file():
                out.append(pkg)
            else:
                raise ProblemError(f"{self.path / 'problem.toml'}: field `handbook.modules`: "
                                   f"no module {name!r} in {self.base / 'reference'}")
        return out

    def suite_dir(self, suite: str) -> Path:
        return self.path / "tests" / suite

    def test_files(self, suite: str) -> list[Path]:
        d = self.suite_dir(suite)
        return sorted(d.glob("test_*.py")) if d.is_dir() else []

    def submissions(self, kind: str) -> list[Path]:
        d = self.path / "submissions" / kind
        return sorted(d.glob("*.py")) if d.is_dir() else []

    # tests
    @cached_property
    def _tests(self) -> dict[str, list[TestInfo]]:
        out: dict[str, list[TestInfo]] = {}
        for suite in SUITES:
            out[suite] = []
            for f in self.test_files(suite):
                for func, line, param in discover_file(f):
                    name = f"{suite}/{f.name}::{func}"
                    out[suite].append(TestInfo(name, suite, f.name, func, line, param,
                                               float(self.config.weights.get(name, 1))))
        return out

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
        files = [(f"problem/{p.relative_to(self.path).as_posix()}", p) for p in _walk(self.path)]
        files.append((f"reference/{self.reference_path.name}", self.reference_path))
        for h in self.handbook_paths:
            if h.is_dir():
                files += [(f"handbook/{h.name}/{p.relative_to(h).as_posix()}", p) for p in _walk(h)]
            else:
                files.append((f"handbook/{h.name}", h))
        return sorted(files)

    @cached_property
    def version(self) -> str:
        """sha256 over every file of the folder, the reference solution and the handbook modules."""
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


# ---- finding problems ---------------------------------------------------------------------

_FOLDER = re.compile(r"^(\d+)-([a-z0-9-]+)$")


def problems_root(root: str | os.PathLike | None = None) -> Path:
    if root is not None:
        return Path(root)
    return Path(os.environ.get("KVPRACTICE_PROBLEMS") or REPO_ROOT / "problems")


def load_problem(name_or_path: str | os.PathLike | Problem, root=None) -> Problem:
    """A problem by number ("143", "7"), slug, folder name ("143-tiered-kv-cache") or path."""
    if isinstance(name_or_path, Problem):
        return name_or_path
    text = str(name_or_path)
    as_path = Path(text)
    if (as_path / "problem.toml").is_file() or as_path.is_dir():
        return Problem(as_path, parse_config(as_path / "problem.toml"))
    base = problems_root(root)
    for folder in sorted(base.iterdir()) if base.is_dir() else []:
        m = _FOLDER.match(folder.name)
        if not m or not (folder / "problem.toml").is_file():
            continue
        number, slug = m.groups()
        if text in (folder.name, slug) or (text.isdigit() and int(text) == int(number)):
            return Problem(folder, parse_config(folder / "problem.toml"))
    raise ProblemError(f"no problem named {text!r} in {base}")


def list_problems(root=None, *, strict: bool = True) -> list[Problem]:
    """Every problem under `root` (default: <repo>/problems), sorted by number.
    With strict=False an invalid folder is skipped instead of raising ProblemError."""
    base = problems_root(root)
    out = []
    for folder in sorted(base.iterdir()) if base.is_dir() else []:
        if not (folder / "problem.toml").is_file():
            continue
        try:
            out.append(Problem(folder, parse_config(folder / "problem.toml")))
        except ProblemError:
            if strict:
                raise
    return sorted(out, key=lambda p: (p.number, p.slug))
