"""`judge`: the instructors' and operators' command line.

    judge grade PROBLEM FILE [--suite public|hidden|all] [--json] [--device auto|cpu|cuda]
    judge check [PROBLEM ...]        every problem when none is named; exit 1 on any mismatch
    judge check --mutate [PROBLEM ...] [--jobs N]   mutants of the reference the tests let through
    judge check --reference-runs N   an imported problem's reference run N times (default 3)
    judge new ID SLUG [--root DIR] [--lang cpp]   a C++ problem that judge check proves as it is
    judge import PATH... [--number N]  problems in the handbook's format (judge/authoring/importer.py)
    judge pack PROBLEM... [--server URL] [--out FILE.zip] [--title TEXT]   a student's package
    judge list [--json]
    judge doctor [--json]

The `judge` console script (web/cli.py `judge_main`, `python -m web`) also has the web
platform's verbs (serve, worker, regrade, parity) and hands these to `main` here; `python -m
judge` has these only. Nothing here imports the web platform.

Exit status: 0 on success (grade: only on AC), 1 on a failed grade/check, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time

from judge.authoring.import_cli import REFERENCE_RUNS, main_import, positive_int
from judge.authoring.import_cli import add_arguments as add_import_arguments
from judge.authoring.proof import record as record_check
from judge.cli.console import Console, Progress, print_check, print_doctor, print_report, problem_labels
from judge.problem import ProblemError, list_problems, load_problem

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def build_parser(front_end_verbs: dict[str, str] | None = None) -> argparse.ArgumentParser:
    """The core's verbs, plus `front_end_verbs` ({verb: help}), listed in --help only: the
    front end that passes them handles them before this parser sees them."""
    bank = argparse.ArgumentParser(add_help=False)
    bank.add_argument("--problems", metavar="DIR",
                      help="the problem bank (default: <repo>/problems)")
    common = argparse.ArgumentParser(add_help=False, parents=[bank])
    common.add_argument("--lang", choices=["en", "zh"], help="language of the messages")
    p = argparse.ArgumentParser(prog="judge", description="Grade, check and create problems.")
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("grade", parents=[common], help="grade a file on a problem")
    g.add_argument("problem")
    g.add_argument("file")
    g.add_argument("--suite", choices=["public", "hidden", "all"], default="all")
    g.add_argument("--json", action="store_true", help="print only the report's JSON")
    g.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    g.add_argument("--reveal-hidden", action="store_true",
                   help="show hidden tests' details (instructors)")
    g.add_argument("--trace", action="store_true",
                   help="the first failure's whole pool timeline (default: its last 4 steps)")
    c = sub.add_parser("check", parents=[common], help="prove problems sound")
    c.add_argument("problem", nargs="*")
    c.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    c.add_argument("--json", action="store_true")
    c.add_argument("--mutate", action="store_true",
                   help="grade mutants of the reference instead: what the tests do not pin down")
    c.add_argument("--jobs", type=int, help="--mutate: gradings at a time (default: CPU count)")
    c.add_argument("--reference-runs", type=positive_int, default=REFERENCE_RUNS, metavar="N",
                   help="run an imported problem's reference N times besides grading it: a "
                        "test whose outcome differs across the runs is reported flaky, not "
                        f"proved (default {REFERENCE_RUNS}; 1: the grading only)")
    n = sub.add_parser("new", parents=[bank], help="create a problem folder")
    n.add_argument("--lang", choices=["en", "zh", "python", "cpp"],
                   help="the problem's language (python, the default, or cpp), or the "
                        "messages' (en, zh)")
    n.add_argument("id")
    n.add_argument("slug")
    n.add_argument("--root", help="where to create it (default: <repo>/problems)")
    n.add_argument("--title")
    add_import_arguments(sub.add_parser("import", parents=[common],
                                        help="import problems in the handbook's format"))
    pk = sub.add_parser("pack", parents=[common], help="a student's package: starters, public "
                        "tests, the runner; no reference, no hidden test")
    pk.add_argument("problem", nargs="+")
    pk.add_argument("--server", metavar="URL", help="where `judge.py submit` sends files")
    pk.add_argument("--out", metavar="FILE", help="the zip (default: <top folder>.zip here)")
    pk.add_argument("--title", help="the package's title (default: the problems)")
    ls = sub.add_parser("list", parents=[common], help="list the problems")
    ls.add_argument("--json", action="store_true")
    d = sub.add_parser("doctor", parents=[common], help="what this machine can run")
    d.add_argument("--json", action="store_true")
    for name, what in (front_end_verbs or {}).items():
        w = sub.add_parser(name, help=what, add_help=False)
        w.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def cmd_grade(args, con: Console) -> int:
    from judge.grading.grader import grade

    problem = load_problem(args.problem, args.problems)
    with open(args.file, encoding="utf-8") as f:
        source = f.read()
    report = grade(problem, source, suite=args.suite, device=args.device,
                   on_event=None if args.json else Progress(con),
                   reveal_hidden=args.reveal_hidden)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
    else:
        print_report(con, report.to_dict(), trace_steps=None if args.trace else 4,
                     labels=problem_labels(problem, con.lang))
        if report.ie_cause and args.reveal_hidden:
            con.print(report.ie_cause)
    return EXIT_OK if report.passed else EXIT_FAIL


def cmd_check(args, con: Console) -> int:
    from judge.authoring.check import check_problem
    from judge.grading.warm_pool import use_by_default

    use_by_default()  # every known submission (or mutant) of a problem: warm zygotes

    names = args.problem or [p.path for p in list_problems(args.problems)]
    if args.mutate:
        from judge.cli.mutation import run
        return run([load_problem(n, args.problems) for n in names], device=args.device,
                   jobs=args.jobs, as_json=args.json, con=con)
    results = []
    for name in names:
        started = time.time()
        def progress(label, report):
            if report is None and not args.json:
                print(f"  {label} ...", file=sys.stderr, flush=True)
        target = name if not isinstance(name, str) else _resolve(name, args.problems)
        res = check_problem(target, device=args.device, on_progress=progress,
                            reference_runs=args.reference_runs)
        results.append(res)
        if res.problem is not None:  # kept beside the problem: /instructor shows it, and
            record_check(res.problem, res, started, by="judge check")  # a draft is proved
        if not args.json:
            print_check(con, res)
    if args.json:
        print(json.dumps([{"problem": r.name, "ok": r.ok, "errors": r.errors,
                           "warnings": r.warnings, "flaky": r.flaky, "table": r.table()}
                          for r in results],
                         ensure_ascii=False, indent=1))
    return EXIT_OK if results and all(r.ok for r in results) else EXIT_FAIL


def _resolve(name: str, root):
    try:
        return load_problem(name, root)
    except ProblemError:
        return name  # check_problem reports it


def cmd_new(args, con: Console) -> int:
    from judge.authoring.scaffold import new_problem

    if args.lang == "cpp":
        return _new_cpp(args, con)
    folder = new_problem(args.id, args.slug, args.root or args.problems, title=args.title)
    con.print(f"created {folder}")
    con.print(f"next: write the statement, tests and the reference solution, then "
              f"`judge check {folder}`")
    con.print("it is a draft (problem.toml: draft = true): the web shows it to platform staff "
              "only until a `judge check` of it passes or an instructor publishes it")
    return EXIT_OK


def _new_cpp(args, con: Console) -> int:
    from judge.authoring.scaffold import new_problem

    folder = new_problem(args.id, args.slug, args.root or args.problems, title=args.title,
                         language="cpp")
    con.print(con.t("created {folder}", folder=folder))
    con.print(con.t("a C++ problem with a worked example (a running sum): `judge check {folder}` "
                    "proves it as it is; then write your own statement, starter, "
                    "reference/solution.cpp and tests/hidden/test.cpp (its example* cases are "
                    "the public ones)", folder=folder))
    con.print(con.t("it is a draft (problem.toml: draft = true): the web shows it to platform "
                    "staff only until a `judge check` of it passes or an instructor publishes it"))
    return EXIT_OK


def cmd_pack(args, con: Console) -> int:
    """A student's package of the named problems (judge/handout/build.py): what it holds,
    what was left out and why."""
    from pathlib import Path

    from judge.handout.build import Scope, build_package, write_zip

    problems = [load_problem(n, args.problems) for n in args.problem]
    title = args.title or ", ".join(f"{p.id}. {p.title(con.lang)}" for p in problems)
    pkg = build_package(problems, Scope("pack", title), args.server)
    out = Path(args.out or f"{pkg.top}.zip")
    with open(out, "wb") as f:
        write_zip(pkg, f)
    con.print(con.t("{path}: {n} files, problems {ids}", path=out, n=len(pkg.files),
                    ids=", ".join(p["id"] for p in pkg.manifest["problems"])))
    for gone in pkg.manifest["left_out"]:
        con.print(con.c(con.t("not in this package: {name} ({why})", name=gone["name"],
                              why=gone["why"]), "yellow"))
    return EXIT_OK


def cmd_list(args, con: Console) -> int:
    problems = list_problems(args.problems, strict=False)
    if args.json:
        print(json.dumps([{"id": p.id, "slug": p.slug, "title": p.titles,
                           "difficulty": p.difficulty, "runs_on": p.runs_on()}
                          for p in problems], ensure_ascii=False, indent=1))
        return EXIT_OK
    if not problems:
        con.print(con.t("no problems found"))
        return EXIT_OK
    con.table(["id", "slug", "title", "difficulty", "runs on"],
              [[p.id, p.slug, p.title(con.lang), con.t(p.difficulty), ", ".join(p.runs_on())]
               for p in problems])
    return EXIT_OK


def cmd_doctor(args, con: Console) -> int:
    from judge.grading.environment import doctor_info

    info = doctor_info()
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=1))
    else:
        print_doctor(con, info)
    return EXIT_OK


COMMANDS = {"grade": cmd_grade, "check": cmd_check, "new": cmd_new, "list": cmd_list,
            "doctor": cmd_doctor, "import": main_import, "pack": cmd_pack}


def main(argv=None, *, front_end_verbs: dict[str, str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(front_end_verbs).parse_args(argv)
    if args.command not in COMMANDS:
        print(f"judge: `{args.command}` belongs to a front end: run it with the `judge` "
              "console script", file=sys.stderr)
        return EXIT_USAGE
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    con = Console(args.lang if args.lang in (None, "en", "zh") else None)
    try:
        return COMMANDS[args.command](args, con)
    except (ProblemError, ValueError, OSError) as e:
        print(f"judge: {e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
