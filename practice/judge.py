#!/usr/bin/env python3
"""The handbook's local practice tool, graded by the platform's own judge.

    python practice/judge.py list                      problems, where they run, your status
    python practice/judge.py start 143                 copy the starter to practice/workspace/
    python practice/judge.py test 143 [FILE] [--public] [--run] [--json] [--trace] [--remote URL]
    python practice/judge.py 143                       same as `test 143`
    python practice/judge.py doctor                    what this machine can run
    python practice/judge.py check [143 ...]           maintainers: every problem proves itself
    python practice/judge.py solution 143

`test` grades practice/workspace/<NNN-slug>.py (or FILE) with the same code the server uses:
public and hidden tests, each in a sandbox, compared with the reference. `--run` runs only the
examples, `--public` only the public tests; `--remote URL` submits to a platform server instead
and shows the same output when its verdict arrives. Exit status 0 only when accepted.
A thin wrapper: all grading logic lives in the `judge` package.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# This file is named like the package it uses: its own folder (put first by Python, or named in
# PYTHONPATH) would make `import judge` import this file. The repository goes first instead.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(REPO)] + [p for p in sys.path
                             if Path(p or os.curdir).resolve() not in (_HERE, REPO)]

from judge.cli.console import (  # noqa: E402
    Console,
    Progress,
    print_check,
    print_doctor,
    print_report,
    problem_labels,
)
from judge.messages import translate  # noqa: E402
from judge.problem import ProblemError, list_problems, load_problem  # noqa: E402

VERBS = ("list", "start", "test", "doctor", "check", "solution")

def workspace() -> Path:
    return Path(os.environ.get("KVPRACTICE_WORKSPACE") or REPO / "practice" / "workspace")


def work_file(problem) -> Path:
    return workspace() / f"{problem.name}.py"


def last_result_path(problem) -> Path:
    return workspace() / ".results" / f"{problem.name}.json"


def status(problem, lang: str) -> str:
    if not work_file(problem).exists():
        return translate("not started", lang)
    try:
        last = json.loads(last_result_path(problem).read_text(encoding="utf-8"))
        return translate("last: {verdict} {score}", lang, verdict=last["verdict"],
                         score=f"{last['score'] * 100:.0f}%")
    except (OSError, ValueError, KeyError):
        return translate("started", lang)


def cmd_list(args, con: Console) -> int:
    where = {"browser": "browser", "cpu": "CPU", "gpu": "GPU"}
    rows = [[p.id, p.name, p.title(con.lang), p.difficulty,
             "/".join(con.t(where[w]) for w in p.runs_on()), status(p, con.lang)]
            for p in list_problems(strict=False)]
    con.table(["#", "id", con.t("title"), con.t("difficulty"), con.t("runs on"), con.t("status")],
              rows)
    return 0


def cmd_start(args, con: Console) -> int:
    p = load_problem(args.problem)
    dest = work_file(p)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        con.print(con.t("{path} already exists; it was left as it is.", path=dest))
    else:
        shutil.copyfile(p.starter_path, dest)
    con.print(p.statement(con.lang))
    con.print(con.c(con.t("Your file: {path}", path=dest), "bold"))
    con.print(con.t("Next: edit it, then run  python practice/judge.py test {id}", id=p.id))
    return 0


def cmd_test(args, con: Console) -> int:
    from judge.grading.grader import grade

    p = load_problem(args.problem)
    path = Path(args.file) if args.file else work_file(p)
    if not path.is_file():
        print(con.t("No file to grade: {path} does not exist. Start with  "
                    "python practice/judge.py start {id}", path=path, id=p.id), file=sys.stderr)
        return 2
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:  # one line, not a codec traceback
        print(con.t("{path} is not UTF-8 text (byte {at} cannot be read): save it as UTF-8 and "
                    "run again", path=path, at=e.start), file=sys.stderr)
        return 2
    if not source.strip():
        print(con.t("{path} is empty: start from the starter with  python practice/judge.py "
                    "start {id}", path=path, id=p.id), file=sys.stderr)
        return 2
    if args.remote:
        return _test_remote(args, con, p, source)
    select = [x.name for x in p.examples()] if args.run else None
    suite = "public" if args.public else "all"
    if select is not None and args.public:
        select = [n for n in select if n.startswith("public/")]
    report = grade(p, source, suite=suite, device=args.device, select=select,
                   on_event=None if args.json else Progress(con))
    data = report.to_dict()
    if not args.file and not args.run and not args.public:
        _save_last(p, data)
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=1))
    else:
        print_report(con, data, trace_steps=None if args.trace else 4,
                     labels=problem_labels(p, con.lang))
        if report.passed and select is None and suite == "all":
            _show_explanation(con, p)
    return 0 if report.passed else 1


def _show_explanation(con: Console, problem) -> None:
    """Imported problems carry the handbook's explanation; it is earned by a full AC."""
    text = problem.explanation(con.lang)
    if text:
        con.print("\n" + con.c(con.t("Accepted. The problem's explanation:"), "bold") + "\n")
        con.print(text.rstrip())


def _test_remote(args, con: Console, problem, source: str) -> int:
    """Submit to a server: the full suite runs there; the output is the same as a local run."""
    from web.client import PlatformClient, RemoteError

    if args.run or args.public:
        print("judge.py: --run and --public are local options; a server grades the full suite",
              file=sys.stderr)
        return 2
    client = PlatformClient(args.remote, token_file=workspace() / ".remote-tokens.json")
    try:
        sid = client.submit(problem.id, source)
        if not args.json:
            con.print(f"submitted to {args.remote} as #{sid}")
        data = client.follow(sid, on_event=None if args.json else Progress(con))
    except RemoteError as e:
        print(f"judge.py: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=1))
    else:
        print_report(con, data, trace_steps=None if args.trace else 4,
                     labels=problem_labels(problem, con.lang))
    return 0 if data.get("verdict") == "AC" else 1


def _save_last(problem, data: dict) -> None:
    path = last_result_path(problem)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"verdict": data["verdict"], "score": data["score"],
                                    "time": time.time()}), encoding="utf-8")
    except OSError:
        pass


def cmd_doctor(args, con: Console) -> int:
    from judge.grading.environment import doctor_info

    print_doctor(con, doctor_info())
    return 0


def cmd_check(args, con: Console) -> int:
    from judge.authoring.check import check_problem

    problems = [load_problem(n) for n in args.problems] if args.problems else list_problems()
    ok = True
    for p in problems:
        res = check_problem(p, device=args.device)
        print_check(con, res)
        ok = ok and res.ok
    return 0 if ok and problems else 1


def cmd_solution(args, con: Console) -> int:
    p = load_problem(args.problem)
    con.print(con.t("Solutions are not shown for graded problems (they have hidden tests). "
                    "`test {id}` tells you where your code first differs from the reference.",
                    id=p.id))
    return 0


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--lang", choices=["en", "zh"], help="language (default: from locale)")
    ap = argparse.ArgumentParser(prog="judge.py", description="The handbook's practice tool.")
    sub = ap.add_subparsers(dest="verb", required=True)
    sub.add_parser("list", parents=[common], help="list the problems")
    s = sub.add_parser("start", parents=[common], help="start a problem")
    s.add_argument("problem")
    te = sub.add_parser("test", parents=[common], help="grade your solution")
    te.add_argument("problem")
    te.add_argument("file", nargs="?")
    te.add_argument("--public", action="store_true", help="only the public tests")
    te.add_argument("--run", action="store_true", help="only the examples")
    te.add_argument("--json", action="store_true", help="print only the report's JSON")
    te.add_argument("--trace", action="store_true", help="the first failure's whole pool "
                    "timeline (default: its last 4 steps)")
    te.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    te.add_argument("--remote", metavar="URL", help="grade on a platform server, e.g. "
                    "http://127.0.0.1:8000")
    sub.add_parser("doctor", parents=[common], help="what this machine can run")
    c = sub.add_parser("check", parents=[common], help="maintainers: prove problems sound")
    c.add_argument("problems", nargs="*")
    c.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    so = sub.add_parser("solution", parents=[common], help="about solutions")
    so.add_argument("problem")
    return ap


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in VERBS and not argv[0].startswith("-"):
        argv.insert(0, "test")  # `judge.py 143` = `judge.py test 143`
    args = build_parser().parse_args(argv)
    con = Console(args.lang)
    handler = {"list": cmd_list, "start": cmd_start, "test": cmd_test, "doctor": cmd_doctor,
               "check": cmd_check, "solution": cmd_solution}[args.verb]
    try:
        return handler(args, con)
    except (ProblemError, ValueError, OSError) as e:
        print(f"judge.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
