"""The C++ fixture book (tests/fixtures/handbook_cpp: problems written for these tests in the
handbook's format), imported into a bank of the test session's own, and one-line mutants of
its solutions."""

from __future__ import annotations

from pathlib import Path

from imported_bank import imported_bank

BOOK = Path(__file__).resolve().parent / "fixtures" / "handbook_cpp"


def cpp_bank(tmp_path_factory) -> dict:
    """{slug: Problem}: lru-cache, owned-buffer, shared-counter (cpp), vec-scale (its Python
    half) and vec-scale-cuda (its CUDA C++ half)."""
    bank = {}
    for book in ("cpp", "cuda"):
        bank.update(imported_bank(tmp_path_factory, BOOK / book, f"cpp-{book}"))
    return bank


def source(slug: str, name: str = "solution.cpp") -> str:
    folder = BOOK / ("cuda" if slug.startswith("vec-scale") else "cpp") / slug.removesuffix("-cuda")
    return (folder / name).read_text(encoding="utf-8")


def mutant(slug: str, old: str, new: str) -> str:
    """The solution with one line changed (`old` must be in it exactly once)."""
    text = source(slug)
    assert text.count(old) == 1, old
    return text.replace(old, new)


def line_of(text: str, fragment: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if fragment in ln)
