"""An unpacked student's package as judge.py reads it: package.json and each problem's folder
(contents.py wrote them). A `BundledProblem` answers what judge.py asks of a problem of the bank
(id, name, titles, statement, starter, examples, hints, labels), so the verbs work the same on
either, and `spec()` is what the page's Run sends its runner for the same file.

Package side: the standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

MANIFEST = "package.json"
_TEST_SUFFIXES = (".py", ".json", ".txt")  # as the page gets them (Problem.public_files)


class BundleError(ValueError):
    """The package is incomplete, or names no such problem."""


@dataclass(frozen=True)
class BundledTest:
    name: str                    # "public/test_examples.py::test_example"
    example: bool

    @property
    def suite(self) -> str:
        return "public"


class BundledProblem:
    def __init__(self, folder: Path):
        self.path = folder
        try:
            self.meta = json.loads((folder / "problem.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BundleError(f"{folder}: no readable problem.json ({exc})") from None

    id = property(lambda self: str(self.meta["id"]))
    slug = property(lambda self: str(self.meta["slug"]))
    name = property(lambda self: str(self.meta["name"]))
    module = property(lambda self: str(self.meta["module"]))
    difficulty = property(lambda self: str(self.meta.get("difficulty", "")))
    requires = property(lambda self: list(self.meta.get("requires") or []))
    version = property(lambda self: str(self.meta.get("version", "")))
    hints = property(lambda self: list(self.meta.get("hints") or []))

    @property
    def number(self) -> int:
        return int(self.id) if self.id.isdigit() else -1

    def title(self, lang: str = "en") -> str:
        titles = self.meta.get("title") or {}
        return titles.get(lang) or titles.get("en") or titles.get("zh") or self.name

    def runs_on(self) -> list[str]:
        where = ["browser"] if self.meta.get("browser") else []
        return where + ([] if "cuda" in self.requires else ["cpu"]) + ["gpu"]

    def statement(self, lang: str = "en") -> str:
        for candidate in (lang, "en", "zh"):
            path = self.path / f"statement.{candidate}.md"
            if path.is_file():
                return path.read_text(encoding="utf-8")
        return ""

    @property
    def starter_path(self) -> Path:
        return self.path / "starter" / f"{self.module}.py"

    def tests(self, suite: str = "all") -> list[BundledTest]:
        examples = set(self.meta.get("examples") or [])
        return [BundledTest(n, n in examples) for n in self.meta.get("tests") or []]

    def examples(self) -> list[BundledTest]:
        return [t for t in self.tests() if t.example]

    def labels(self, lang: str = "zh") -> dict[str, str]:
        return dict((self.meta.get("labels") or {}).get(lang) or {})

    def explanation(self, lang: str = "zh") -> None:
        return None  # never in a package: the problem's page opens it after an AC

    def spec(self, source: str) -> dict:
        """The page's Run of `source` (web/frontend/src/run_submit.js sends the same keys)."""
        tests_dir = self.path / "tests"
        tests = {p.relative_to(tests_dir).as_posix(): p.read_text(encoding="utf-8")
                 for p in sorted((tests_dir / "public").rglob("*"))
                 if p.is_file() and p.suffix in _TEST_SUFFIXES}
        handbook = {p.stem: p.read_text(encoding="utf-8")
                    for p in sorted((self.path / "handbook").glob("*.py"))}
        return {"module": self.module, "source": source, "tests": tests, "handbook": handbook,
                "install": list(self.meta.get("install") or []),
                "expected": self.meta.get("expected"), "weights": self.meta.get("weights") or {},
                "python": self.meta.get("grading_python"), "hints": self.hints}


class Bundle:
    """The package at `root`: its manifest and problems."""

    def __init__(self, root: Path):
        self.root = root
        try:
            self.manifest = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BundleError(f"{root / MANIFEST} cannot be read ({exc})") from None
        self._problems = [BundledProblem(root / "problems" / str(p["name"]))
                          for p in self.manifest.get("problems") or []]

    @property
    def server(self) -> str | None:
        return self.manifest.get("server")

    @property
    def left_out(self) -> list[dict]:
        return list(self.manifest.get("left_out") or [])

    def problems(self) -> list[BundledProblem]:
        return list(self._problems)

    def find(self, ref: str) -> BundledProblem:
        """By number ("143", "0143"), id, slug or folder name, as the bank's load_problem."""
        ref = str(ref).strip()
        for p in self._problems:
            if ref in (p.id, p.slug, p.name) or (ref.isdigit() and int(ref) == p.number):
                return p
        gone = [x for x in self.left_out if ref in (str(x.get("id")), x.get("name"))]
        if gone:
            raise BundleError(f"problem {ref} is not in this package: {gone[0].get('why')}")
        have = ", ".join(p.id for p in self._problems)
        raise BundleError(f"no problem named {ref!r} in this package (it has {have})")
