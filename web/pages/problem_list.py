"""The problem list for a bank of hundreds (the handbook has about 280): grouped by book and
chapter, filtered by difficulty, tag, text and the visitor's status, all by the query string
(`/?difficulty=hard&tag=kv-cache&q=router&status=tried`), so it works without scripts and a
filtered list is a link one can share.

The page does one pass over the bank (every problem.toml is read per request, as everywhere
else, so an edited problem shows at once) and one query for the visitor's cells; with 250
problems it is rendered in well under 300 ms (tests/web_platform/test_problem_list.py measures it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judge.problem import Problem

DIFFICULTIES = ("easy", "medium", "hard")
STATUSES = ("solved", "tried", "new")
NATIVE_BOOK = ""   # problems written for this platform, not imported from a book


@dataclass
class Filters:
    difficulty: str = ""
    tag: str = ""
    q: str = ""
    status: str = ""

    @classmethod
    def from_query(cls, params) -> "Filters":
        difficulty = params.get("difficulty", "")
        status = params.get("status", "")
        return cls(difficulty=difficulty if difficulty in DIFFICULTIES else "",
                   tag=params.get("tag", "")[:100].strip(),
                   q=" ".join(params.get("q", "")[:200].split()),
                   status=status if status in STATUSES else "")

    @property
    def active(self) -> bool:
        return bool(self.difficulty or self.tag or self.q or self.status)


@dataclass
class Row:
    problem: Problem
    book: str
    chapter: str
    status: str            # solved | tried | new
    cell: object = None    # the visitor's gradebook cell (web.store.gradebook), or None
    text: str = ""         # what the text filter searches, lower-cased


@dataclass
class Chapter:
    name: str
    rows: list[Row] = field(default_factory=list)


@dataclass
class Book:
    name: str              # "" for the platform's own problems
    chapters: list[Chapter] = field(default_factory=list)
    total: int = 0
    solved: int = 0


@dataclass
class ProblemList:
    books: list[Book]
    shown: int
    total: int
    tags: list[tuple[str, int]]            # every tag of the bank, with its count
    counts: dict[str, int]                 # solved / tried / new over the whole bank


def status_of(cell) -> str:
    """"solved" once any submission was accepted, "tried" after any other, else "new"."""
    if cell is None:
        return "new"
    return "solved" if cell.best and cell.best.verdict == "AC" else "tried"


def _book(p) -> str:
    src = p.config.source
    return src.book if src is not None and src.book else NATIVE_BOOK


def tag_key(tag: str) -> str:
    """One tag however a problem spells it ("KV cache", "kv-cache", "KV-Cache": "kv-cache"):
    the handbook's front matter and the project's own problems write them differently."""
    return "-".join(tag.lower().replace("_", " ").replace("-", " ").split())


def tags_of(problem) -> list[str]:
    return list(dict.fromkeys(tag_key(t) for t in problem.tags if tag_key(t)))


def chapter_words(chapter: str) -> str:
    """A chapter as a reader names it: the handbook's path of an imported problem
    ("python/asyncio.md") as its words ("python · asyncio"); any other name as it is."""
    if "/" not in chapter and not chapter.endswith(".md"):
        return chapter
    parts = [p.removesuffix(".md").replace("-", " ").replace("_", " ")
             for p in chapter.strip("/").split("/") if p]
    return " · ".join(p for p in parts if p) or chapter


def _matches(row: Row, f: Filters) -> bool:
    p = row.problem
    if f.difficulty and p.difficulty != f.difficulty:
        return False
    if f.tag and tag_key(f.tag) not in tags_of(p):
        return False
    if f.status and row.status != f.status:
        return False
    return all(word in row.text for word in f.q.lower().split())


def build(problems, progress: dict, f: Filters) -> ProblemList:
    """Books in order (the platform's own first, then by name), chapters in the order of
    their first problem, problems by number."""
    rows: list[Row] = []
    tags: dict[str, int] = {}
    counts = dict.fromkeys(STATUSES, 0)
    for p in problems:
        cell = progress.get(p.id)
        status = status_of(cell)
        counts[status] += 1
        for t in tags_of(p):
            tags[t] = tags.get(t, 0) + 1
        titles = " ".join(p.titles.values())
        text = " ".join([p.id, p.slug, titles, p.chapter, _book(p), *p.tags]).lower()
        rows.append(Row(p, _book(p), p.chapter, status, cell, text))
    books: dict[str, Book] = {}
    for row in rows:
        book = books.setdefault(row.book, Book(row.book))
        book.total += 1
        book.solved += row.status == "solved"
    shown = 0
    chapters: dict[tuple[str, str], Chapter] = {}
    for row in rows:
        if not _matches(row, f):
            continue
        shown += 1
        key = (row.book, row.chapter)
        if key not in chapters:
            chapters[key] = Chapter(row.chapter)
            books[row.book].chapters.append(chapters[key])
        chapters[key].rows.append(row)
    ordered = sorted(books.values(), key=lambda b: (b.name != NATIVE_BOOK, b.name))
    return ProblemList(books=[b for b in ordered if b.chapters], shown=shown, total=len(rows),
                       tags=sorted(tags.items()), counts=counts)
