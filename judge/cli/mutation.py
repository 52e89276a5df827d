"""The `judge check --mutate` front end: runs the gate problem by problem, prints the mutants
the tests let through (by line, with their diff) and the summary line, or JSON."""

from __future__ import annotations

import json
import sys

from judge.authoring.mutation.gate import CUDA_ONLY, ERROR, NOT_RUN, MutationResult, mutate_problem
from judge.cli.console import Console

EXIT_OK, EXIT_FAIL = 0, 1


def run(problems: list, *, device: str, jobs: int | None, as_json: bool, con: Console) -> int:
    results = []
    for p in problems:
        progress = None if as_json else _Progress(p)
        res = mutate_problem(p, device=device, jobs=jobs, on_progress=progress)
        results.append(res)
        if progress:
            progress.end()
        if not as_json:
            print_mutation(con, res)
    if as_json:
        print(json.dumps([r.to_dict() for r in results], ensure_ascii=False, indent=1))
    return EXIT_OK if results and all(r.ok for r in results) else EXIT_FAIL


def print_mutation(con: Console, res: MutationResult) -> None:
    con.print(con.c(f"{res.problem}: mutation gate ({res.path}, {res.device}, "
                    f"{res.wall_s:.0f}s)", "bold"))
    for e in res.errors:
        con.print(con.c(f"  error: {e}", "red"))
    for w in res.warnings:
        con.print(con.c(f"  warning: {w}", "yellow"))
    rows, last = [], None
    for r in res.survivors:
        label = {NOT_RUN: f"not run on {res.device}", CUDA_ONLY: "CUDA-only",
                 ERROR: f"error: {r.killed_by}"}.get(r.status, r.status)
        line = "" if r.mutant.line == last else str(r.mutant.line)
        last = r.mutant.line
        rows.append([line, label, r.mutant.operator, r.mutant.diff(res.path)])
    if rows:
        colors = {"survived": "red", "CUDA-only": "dim"}
        con.table(["line", "status", "operator", "change"], rows,
                  colors=lambda i, j, cell: con.c(cell, colors.get(cell, "yellow"))
                  if j == 1 else cell)
    verdict = con.c("OK", "green") if res.ok else con.c("FAILED", "red")
    con.print(f"{res.summary()}  {verdict}")
    con.print()


class _Progress:
    """One line on stderr, rewritten in place on a terminal, else a line every tenth."""

    def __init__(self, name):
        self.name = getattr(name, "name", name)
        self.tty = sys.stderr.isatty()
        self.step = None

    def __call__(self, done: int, total: int, r) -> None:
        self.step = self.step or max(1, total // 10)
        text = f"  {self.name}: {done}/{total} mutants"
        if self.tty:
            print(f"\r{text}", end="", file=sys.stderr, flush=True)
        elif done % self.step == 0 or done == total:
            print(text, file=sys.stderr, flush=True)

    def end(self) -> None:
        if self.tty and self.step:
            print(file=sys.stderr, flush=True)
