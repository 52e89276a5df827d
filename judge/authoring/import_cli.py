"""`judge import`'s command line (registered in judge/cli/main.py): imports with
judge/authoring/importer.py, then proves each imported problem (judge/authoring/import_check.py)
unless --no-check, and prints what it did and why."""

from __future__ import annotations

import argparse

from judge.authoring.check import REFERENCE_RUNS
from judge.authoring.importer import ATTRIBUTION, DEFAULT_BASE, ImportResult, import_problems


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (`--reference-runs 0` proves nothing)."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return n


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a handbook problem folder, or a folder of them (a book, "
                        "practice/problems)")
    p.add_argument("--number", type=int, help="the number for the one problem imported")
    p.add_argument("--base", type=int, default=DEFAULT_BASE,
                   help=f"the first number new problems get (default {DEFAULT_BASE})")
    p.add_argument("--source-url", help="where practice/problems is published: each problem "
                                        "links to URL/<book>/<slug>")
    p.add_argument("--attribution", help=f"whom the texts are by (default: {ATTRIBUTION})")
    p.add_argument("--runtime", metavar="DIR",
                   help="the handbook's runtime modules (default: the practice/runtime/ beside "
                        "the practice/problems/ the paths are in); those a problem imports are "
                        "copied into the bank's reference/")
    p.add_argument("--no-check", dest="check", action="store_false",
                   help="do not prove each imported problem (by default each is checked as "
                        "`judge check` does: its solution AC, its starter not AC)")
    p.add_argument("--reference-runs", type=positive_int, default=REFERENCE_RUNS, metavar="N",
                   help="the check runs each problem's solution N times: a test whose "
                        "outcome differs across the runs makes it flaky, not proved "
                        f"(default {REFERENCE_RUNS})")


def main_import(args, con) -> int:
    res = import_problems(args.paths, args.problems, number=args.number, base=args.base,
                          source_url=args.source_url, attribution=args.attribution,
                          runtime=getattr(args, "runtime", None))
    for note in res.notes:
        con.print(note)
    for item in res.imported:
        con.print(f"{'updated ' if item.updated else 'imported'}  {item.key} -> {item.folder}")
        for note in item.notes:
            con.print(f"          {note}")
    for path, reason in res.refused:
        con.print(f"refused   {path}: {reason}")
    unproved = 0
    if res.imported and getattr(args, "check", True):
        unproved = _check_all(res, args, con)
    elif res.imported:
        where = f" --problems {args.problems}" if args.problems else ""
        con.print("next: judge check " + " ".join(str(i.number) for i in res.imported) + where)
    return 1 if res.refused or not res.imported or unproved else 0


def _check_all(res: ImportResult, args, con) -> int:
    """Proves each imported problem; prints its warnings and failures; returns how many failed
    (a flaky one among them: its solution's tests' outcomes differed across its runs)."""
    from judge.authoring.import_check import check_imported
    from judge.problem import load_problem

    failed = flaky = 0
    for item in res.imported:
        checked = check_imported(load_problem(item.folder), device=getattr(args, "device", "auto"),
                                 reference_runs=getattr(args, "reference_runs", REFERENCE_RUNS))
        verdicts = ", ".join(f"{k} {v}" for k, v in checked.verdicts.items())
        status = "proved  " if checked.ok else "flaky     " if checked.flaky else "NOT proved"
        con.print(f"{status}  {item.number} {item.key}" + (f" ({verdicts})" if verdicts else ""))
        for w in checked.warnings:
            con.print(f"          warning: {w}")
        for f in checked.failures:
            con.print(f"          {f}")
        failed += not checked.ok
        flaky += bool(checked.flaky)
    con.print(f"{len(res.imported) - failed} of {len(res.imported)} imported problems prove "
              "themselves" + (f"; {flaky} flaky (its solution's tests pass or fail by chance)"
                              if flaky else ""))
    return failed
