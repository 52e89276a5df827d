"""Per-student, per-problem progress: the instructor's gradebook and a student's own statuses.

Only students' own submissions count (kind "live"; regrade and parity jobs do not). For each
(student, problem): `attempts` (every submission, graded or not), `best` (the graded submission
with the highest score, an AC before any other verdict, the earliest among equals) and `latest`
(the newest submission: its verdict once graded, else its state, "queued" or "running").
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from sqlalchemy import select

from web.store.db import DONE, LIVE, Submission, Visitor


@dataclass
class Mark:
    """One graded or pending submission as the gradebook shows it."""
    submission: int
    verdict: str          # the verdict once graded, else the state (queued, running)
    score: float | None

    def as_dict(self) -> dict:
        return {"submission": self.submission, "verdict": self.verdict, "score": self.score}


@dataclass
class Cell:
    attempts: int = 0
    best: Mark | None = None
    latest: Mark | None = None

    def as_dict(self) -> dict:
        return {"attempts": self.attempts,
                "best": self.best.as_dict() if self.best else None,
                "latest": self.latest.as_dict() if self.latest else None}


@dataclass
class Student:
    id: int
    display_name: str | None
    cells: dict[str, Cell] = field(default_factory=dict)

    @property
    def solved(self) -> int:
        return sum(1 for c in self.cells.values() if c.best and c.best.verdict == "AC")


def _rank(mark: Mark) -> tuple:
    return (mark.verdict == "AC", mark.score or 0.0)


def _add(cell: Cell, sub_id: int, status: str, verdict: str | None, score: float | None) -> None:
    """Rows arrive oldest first, so the last one seen is the latest and a tie keeps the first."""
    cell.attempts += 1
    graded = status == DONE and verdict is not None
    mark = Mark(sub_id, verdict if graded and verdict is not None else status,
                score if graded else None)
    cell.latest = mark
    if graded and (cell.best is None or _rank(mark) > _rank(cell.best)):
        cell.best = mark


def student_cells(db, visitor_id: int) -> dict[str, Cell]:
    """One student's cells by problem id (the home page's statuses)."""
    cells: dict[str, Cell] = {}
    with db.session() as s:
        for sid, pid, status, verdict, score in s.execute(
                select(Submission.id, Submission.problem_id, Submission.status,
                       Submission.verdict, Submission.score)
                .where(Submission.visitor_id == visitor_id, Submission.kind == LIVE)
                .order_by(Submission.id)):
            _add(cells.setdefault(pid, Cell()), sid, status, verdict, score)
    return cells


def gradebook(db, problem_ids: list[str]) -> dict:
    """Every student with a submission, as rows over the problems' columns: the catalog's
    problems in its order, then any other problem a submission names."""
    students: dict[int, Student] = {}
    with db.session() as s:
        for sid, vid, name, pid, status, verdict, score in s.execute(
                select(Submission.id, Submission.visitor_id, Visitor.display_name,
                       Submission.problem_id, Submission.status, Submission.verdict,
                       Submission.score)
                .join(Visitor, Visitor.id == Submission.visitor_id)
                .where(Submission.kind == LIVE)
                .order_by(Submission.id)):
            st = students.setdefault(vid, Student(vid, name))
            _add(st.cells.setdefault(pid, Cell()), sid, status, verdict, score)
    columns = list(problem_ids)
    for st in students.values():
        columns += [p for p in st.cells if p not in columns]
    rows = sorted(students.values(), key=lambda st: ((st.display_name or "").lower(), st.id))
    return {"problems": columns,
            "students": [{"id": st.id, "display_name": st.display_name, "solved": st.solved,
                          "cells": {p: c.as_dict() for p, c in st.cells.items()}}
                         for st in rows]}


# A spreadsheet reads a formula from a cell, or from any part of it it splits off at ; or ,
# (whichever separator it was set to), that starts with one of these (CSV injection); a leading
# apostrophe makes the part text. Tab and carriage return start formulas in some of them too.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PARTS = re.compile(r"([;,])")


def formula_safe(text: str) -> str:
    """`text` with every ;- or ,-separated part that would start a formula made text."""
    return "".join("'" + part if part.startswith(_FORMULA_STARTS) else part
                   for part in _PARTS.split(text))


def safe_cell(value) -> str:
    return formula_safe("" if value is None else str(value))


def _score(mark: dict | None) -> str:
    return "" if not mark or mark["score"] is None else f"{mark['score'] * 100:.0f}"


def gradebook_csv(book: dict) -> str:
    """One row per student; per problem: best verdict, best score (%), latest verdict, latest
    score (%), attempts."""
    out = io.StringIO()
    # Every text cell quoted (numbers stay numbers), so no separator inside one splits it.
    w = csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_NONNUMERIC)
    head = ["student_id", "display_name", "solved"]
    for p in book["problems"]:
        head += [f"{p} best", f"{p} best score %", f"{p} latest", f"{p} latest score %",
                 f"{p} attempts"]
    w.writerow([safe_cell(h) for h in head])
    for st in book["students"]:
        row = [st["id"], st["display_name"] or "", st["solved"]]
        for p in book["problems"]:
            c = st["cells"].get(p)
            if c is None:
                row += ["", "", "", "", 0]
                continue
            best, latest = c["best"], c["latest"]
            row += [best["verdict"] if best else "", _score(best),
                    latest["verdict"] if latest else "", _score(latest), c["attempts"]]
        w.writerow([v if isinstance(v, (int, float)) else safe_cell(v) for v in row])
    return out.getvalue()
