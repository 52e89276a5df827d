"""The problem bank as the web pages see it: problem folders read by their documented layout.

Only what a page or the browser needs is read here (titles, statements, the starter, the public
test files, the handbook modules a solution may import). Grading goes through the grading core.
The reference solution is never read here, and never served.
"""

from __future__ import annotations

import hashlib
import logging
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

DIFFICULTY_ORDER = {"easy": 0, "medium": 1, "hard": 2}


@dataclass
class ProblemInfo:
    id: str
    slug: str
    folder: Path
    title: dict
    difficulty: str
    chapter: str
    tags: list
    requires: list
    browser: bool
    module: str
    handbook_modules: list
    reference_path: str | None
    limits: dict
    weights: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)   # [source] of an imported problem

    @property
    def key(self) -> str:
        return f"{self.id}-{self.slug}"

    def title_in(self, lang: str) -> str:
        return self.title.get(lang) or self.title.get("en") or next(iter(self.title.values()), self.slug)

    def languages(self) -> list[str]:
        return [lang for lang in ("en", "zh") if (self.folder / f"statement.{lang}.md").exists()]

    def statement(self, lang: str) -> str:
        for candidate in (lang, "en", "zh"):
            p = self.folder / f"statement.{candidate}.md"
            if p.exists():
                return p.read_text(encoding="utf-8")
        return ""

    def explanation(self, lang: str) -> str | None:
        """The worked explanation of an imported problem; pages show it only after an AC."""
        for candidate in (lang, "zh", "en"):
            p = self.folder / f"explanation.{candidate}.md"
            if p.exists():
                return p.read_text(encoding="utf-8")
        return None

    def starter(self) -> str:
        p = self.folder / "starter" / f"{self.module}.py"
        if p.exists():
            return p.read_text(encoding="utf-8")
        files = sorted((self.folder / "starter").glob("*.py"))
        return files[0].read_text(encoding="utf-8") if files else ""

    def public_files(self) -> dict[str, str]:
        """{"public/test_x.py": text, "public/helper.py": text}: what the browser runs."""
        base = self.folder / "tests"
        out = {}
        for p in sorted((base / "public").rglob("*")):
            if p.is_file() and p.suffix in (".py", ".json", ".txt") and "__pycache__" not in p.parts:
                out[p.relative_to(base).as_posix()] = p.read_text(encoding="utf-8")
        return out

    def handbook_sources(self, reference_dir: Path) -> dict[str, str]:
        """The handbook modules a solution may import, by flat module name (never the answer)."""
        out = {}
        ref_file = None
        if self.reference_path:
            ref_file = Path(self.reference_path).name
        for name in self.handbook_modules:
            p = Path(reference_dir) / f"{name}.py"
            if name == self.module or p.name == ref_file or not p.exists():
                continue
            out[name] = p.read_text(encoding="utf-8")
        return out

    def version(self, reference_dir: Path) -> str:
        """A content hash of what the public tests depend on (folder, handbook modules)."""
        h = hashlib.sha256()
        for p in sorted(self.folder.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                h.update(p.relative_to(self.folder).as_posix().encode() + b"\0")
                h.update(p.read_bytes() + b"\0")
        for name, text in sorted(self.handbook_sources(reference_dir).items()):
            h.update(name.encode() + b"\0" + text.encode() + b"\0")
        return h.hexdigest()

    def summary(self) -> dict:
        return {"id": self.id, "slug": self.slug, "title": self.title,
                "difficulty": self.difficulty, "chapter": self.chapter, "tags": self.tags,
                "requires": self.requires, "browser": self.browser}


def _load(folder: Path) -> ProblemInfo:
    data = tomllib.loads((folder / "problem.toml").read_text(encoding="utf-8"))
    pid = str(data["id"])
    title = data.get("title") or {}
    if isinstance(title, str):
        title = {"en": title}
    return ProblemInfo(
        id=pid,
        slug=str(data.get("slug") or folder.name.split("-", 1)[-1]),
        folder=folder,
        title=dict(title),
        difficulty=str(data.get("difficulty", "medium")),
        chapter=str(data.get("chapter", "")),
        tags=list(data.get("tags", [])),
        requires=list(data.get("requires", [])),
        browser=bool(data.get("browser", True)),
        module=str((data.get("submission") or {}).get("module") or "solution"),
        handbook_modules=list((data.get("handbook") or {}).get("modules", [])),
        reference_path=(data.get("reference") or {}).get("path"),
        limits=dict(data.get("limits") or {}),
        weights=dict(data.get("weights") or {}),
        source=dict(data.get("source") or {}),
    )


class Catalog:
    """Reads problem folders on demand (a handful of small files), so edits show up at once."""

    def __init__(self, problems_dir: Path, reference_dir: Path):
        self.problems_dir = Path(problems_dir)
        self.reference_dir = Path(reference_dir)
        self.errors: dict[str, str] = {}

    def list(self) -> list[ProblemInfo]:
        out, errors = [], {}
        if self.problems_dir.is_dir():
            for folder in sorted(self.problems_dir.iterdir()):
                if not (folder / "problem.toml").is_file():
                    continue
                try:
                    out.append(_load(folder))
                except Exception as exc:  # a broken folder must not take the site down
                    errors[folder.name] = f"{type(exc).__name__}: {exc}"
        self.errors = errors

        def order(p: ProblemInfo):
            return (int(p.id) if p.id.isdigit() else 10**9, p.id)

        return sorted(out, key=order)

    def get(self, ref: str) -> ProblemInfo | None:
        ref = str(ref).strip().lower()
        for p in self.list():
            if ref in (p.id.lower(), p.slug.lower(), p.key.lower(), p.folder.name.lower()):
                return p
        return None
