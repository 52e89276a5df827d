"""`problem.toml`: its schema (pydantic, unknown keys refused) and the error a bad folder raises.

Everything a verdict depends on besides the files (limits, weights, the handbook modules, the
reference's path) is declared here; `Problem.version` hashes this file with the rest.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from judge.judging.vocabulary import FailureKind

LANGS = ("en", "zh")


class ProblemError(ValueError):
    """A problem folder is missing or invalid; the message names the file and the field."""



class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Title(_Strict):
    en: str = Field(min_length=1)
    zh: str = Field(min_length=1)


class SubmissionConfig(_Strict):
    module: str   # the student's file is <module>.py (Python), <module>.cpp, <module>.cu

    @field_validator("module")
    @classmethod
    def _identifier(cls, v: str) -> str:
        if not v.isidentifier():
            raise ValueError(f"{v!r} is not a Python module name")
        return v


class HandbookConfig(_Strict):
    modules: list[str] = []
    # modules whose `install()` every process that imports the solution or the tests calls
    # first (the handbook's `tritonkit`: `import triton` then gets a simulator, or real Triton
    # where it and a CUDA device exist); each one of `modules`, so it is mounted where it runs
    install: list[str] = []

    @field_validator("modules", "install")
    @classmethod
    def _identifiers(cls, v: list[str]) -> list[str]:
        # a module name becomes a path under the handbook folder: `../x` would mount any file
        import keyword
        for name in v:
            if not name.isidentifier() or keyword.iskeyword(name):
                raise ValueError(f"{name!r} is not a module name (letters, digits and _, "
                                 "no dots or slashes)")
        return v

    @model_validator(mode="after")
    def _installed_are_mounted(self) -> "HandbookConfig":
        missing = [n for n in self.install if n not in self.modules]
        if missing:
            raise ValueError(f"install names {', '.join(missing)}, which `modules` does not "
                             "list: a module to install must be one the problem mounts")
        if len(set(self.install)) != len(self.install):
            raise ValueError("install names a module twice")
        return self


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


class NativeConfig(_Strict):
    """A C++ or CUDA C++ problem (`language = "cpp"` / `"cuda"`): its test is
    tests/hidden/test.cpp (.cu), compiled with the student's file (judge/grading/cpp/)."""
    # the handbook's `sanitize:`: ASan + UBSan by default, TSan for `thread`
    sanitize: Literal["address,undefined", "thread", "none"] = "address,undefined"
    std: Literal["c++17", "c++20", "c++23"] = "c++20"


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
    language: Literal["python", "cpp", "cuda"] = "python"
    native: NativeConfig = NativeConfig()
    title: Title
    submission: SubmissionConfig
    handbook: HandbookConfig = HandbookConfig()
    reference: ReferenceConfig
    limits: LimitsConfig = LimitsConfig()
    weights: dict[str, float] = {}
    check: CheckConfig = CheckConfig()
    source: SourceConfig | None = None
    # `judge new` writes true: the web shows the problem to platform staff only until a
    # `judge check` of it passes or an instructor publishes it (web.http.drafts)
    draft: bool = False

    @field_validator("weights")
    @classmethod
    def _positive(cls, v: dict[str, float]) -> dict[str, float]:
        for name, w in v.items():
            if w <= 0:
                raise ValueError(f"weight of {name!r} must be > 0")
        return v


class RuleAnchor(_Strict):
    """The statement heading a hint is about, as its anchor in each language's statement
    (judge.judging.hints.heading_anchor of the heading's text)."""
    en: str = Field(min_length=1)
    zh: str = Field(min_length=1)


class HintConfig(_Strict):
    """One hint of `hints.toml`: shown when a report's first failure is in one of `tests` or at
    one of the observation `labels`; `en`/`zh` are its levels, vaguest first."""
    id: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    tests: list[str] = []
    labels: list[str] = []
    # only for a first failure of this kind ("exception": it raised), where the test alone
    # would also meet failures that have nothing to do with this hint
    kind: FailureKind | None = None
    rule: RuleAnchor
    en: list[str] = Field(min_length=1)
    zh: list[str] = Field(min_length=1)

    @model_validator(mode="after")
    def _keyed_and_paired(self):
        if not self.tests and not self.labels:
            raise ValueError("a hint needs `tests` or `labels` to be shown for")
        if len(self.en) != len(self.zh):
            raise ValueError(f"hint {self.id!r}: {len(self.en)} levels in en, {len(self.zh)} in zh")
        return self


class HintsFile(_Strict):
    hint: list[HintConfig] = []

    @field_validator("hint")
    @classmethod
    def _unique(cls, v: list[HintConfig]) -> list[HintConfig]:
        ids = [h.id for h in v]
        if len(ids) != len(set(ids)):
            raise ValueError("two hints have the same id")
        return v


def parse_hints(toml_path: Path) -> list[HintConfig]:
    """A problem's `hints.toml` ([] when it has none)."""
    if not toml_path.is_file():
        return []
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
        return HintsFile.model_validate(data).hint
    except tomllib.TOMLDecodeError as e:
        raise ProblemError(f"{toml_path}: not valid TOML: {e}") from None
    except ValidationError as e:
        lines = [f"{toml_path}: invalid hints.toml"]
        for err in e.errors():
            field = ".".join(str(p) for p in err["loc"]) or "(top level)"
            lines.append(f"  field `{field}`: {err['msg']}")
        raise ProblemError("\n".join(lines)) from None


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


