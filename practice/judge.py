#!/usr/bin/env python3
"""The handbook's local practice tool, graded by the platform's own judge.

    python judge.py list                       problems, where they run, your status
    python judge.py start 143                  copy the starter to workspace/, print the statement
    python judge.py test 143 [FILE] [--json]   grade your file (see below)
    python judge.py 143                        same as `test 143`
    python judge.py hint 143                   a hint for your last failure, then a more specific one
    python judge.py login [--server URL]       keep a personal token made on the server's /account page
    python judge.py submit 143 [FILE]          the server grades it with the hidden tests
    python judge.py solution 143
  in a checkout of the repository only:
    python practice/judge.py doctor            what this machine can run
    python practice/judge.py check [143 ...]   maintainers: every problem proves itself
    python practice/judge.py test 143 [--public] [--run] [--trace] [--remote URL]

Two homes. In a student's package (package.json beside this file, made by the server or `judge
pack`) `test` runs the public tests exactly as the problem page's Run does, against the
reference's recorded observations; there is no reference or hidden test to run. In a checkout
`test` grades public and hidden tests, each in a sandbox, compared with the reference
(`--run`: only the examples, `--public`: only the public tests). `submit` sends the file to the
course's server, where it counts as a Submit in the page. Exit status 0 only when accepted.
A thin front end: grading lives in the `judge` package, HTTP in web/submit_client.py.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

if sys.version_info < (3, 11):
    sys.exit("judge.py needs Python 3.11 or newer (this is Python %d.%d)" % sys.version_info[:2])

_HERE = Path(__file__).resolve().parent
IN_PACKAGE = (_HERE / "package.json").is_file()
# This file is named like the package it uses: its own folder (put first by Python, or named in
# PYTHONPATH) would make `import judge` import this file. The library's folder goes first.
LIB = _HERE / "lib" if IN_PACKAGE else _HERE.parent
sys.path[:] = [str(LIB)] + [p for p in sys.path
                            if Path(p or os.curdir).resolve() not in (_HERE, LIB)]

from judge.cli.console import Console, Progress, print_report  # noqa: E402
from judge.cli.failure_text import FailureContext, hint_lines, hint_steps  # noqa: E402
from judge.messages import translate  # noqa: E402

VERBS = ("list", "start", "test", "hint", "login", "logout", "submit", "doctor", "check",
         "solution")
CHECKOUT_ONLY = ("doctor", "check")
ME = "python judge.py" if IN_PACKAGE else "python practice/judge.py"


class Refusal(Exception):
    """What to tell the student instead of a result: a code (for --json) and the words."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


# ---- where problems and files are ----------------------------------------------------------

def workspace() -> Path:
    home = _HERE if IN_PACKAGE else _HERE.parent / "practice"
    return Path(os.environ.get("KVPRACTICE_WORKSPACE") or home / "workspace")


def _bundle():
    from judge.handout.bundle import Bundle
    return Bundle(_HERE)


def all_problems() -> list:
    if IN_PACKAGE:
        return _bundle().problems()
    from judge.problem import list_problems
    return list_problems(strict=False)


def find_problem(ref: str):
    if IN_PACKAGE:
        return _bundle().find(ref)
    from judge.problem import load_problem
    return load_problem(ref)


def work_file(problem) -> Path:
    return workspace() / f"{problem.name}.py"


def last_result_path(problem) -> Path:
    return workspace() / ".results" / f"{problem.name}.json"


def shown_path(problem) -> Path:
    return workspace() / ".results" / f"{problem.name}.hints.json"


def labels_of(problem, lang: str) -> dict:
    try:
        return problem.labels(lang)
    except Exception:  # a broken labels file: `judge check` says how; English here
        return {}


def context_for(problem, path: Path, lang: str) -> FailureContext:
    try:
        shown = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        shown = str(path)
    return FailureContext(your_file=shown if len(shown) < len(str(path)) else str(path),
                          module_file=f"{problem.module}.py", statement=problem.statement(lang),
                          hint_command=f"{ME} hint {problem.id}")


def read_source(path: Path, problem) -> str:
    """The file's text, or a Refusal that says in one line why it cannot be graded."""
    if not path.is_file():
        raise Refusal("no_file", translate(
            "No file to grade: {path} does not exist. Start with  {me} start {id}", LANG[0],
            path=path, me=ME, id=problem.id))
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:  # one line, not a codec traceback
        raise Refusal("not_utf8", translate(
            "{path} is not UTF-8 text (byte {at} cannot be read): save it as UTF-8 and run again",
            LANG[0], path=path, at=e.start)) from None
    if not source.strip():
        raise Refusal("empty_file", translate(
            "{path} is empty: start from the starter with  {me} start {id}", LANG[0],
            path=path, me=ME, id=problem.id))
    return source


LANG = ["en"]  # the console's language, for messages raised before a Console prints them


# ---- list, start ---------------------------------------------------------------------------

def status(problem, lang: str) -> str:
    if not work_file(problem).exists():
        return translate("not started", lang)
    try:
        last = json.loads(last_result_path(problem).read_text(encoding="utf-8"))
        return translate("last: {verdict} {score}", lang, verdict=last["verdict"],
                         score=f"{last['score'] * 100:.0f}%")
    except (OSError, ValueError, KeyError, TypeError):
        return translate("started", lang)


def cmd_list(args, con: Console) -> int:
    where = {"browser": "browser", "cpu": "CPU", "gpu": "GPU"}
    rows = [[p.id, p.name, p.title(con.lang), con.t(p.difficulty),
             "/".join(con.t(where[w]) for w in p.runs_on()), status(p, con.lang)]
            for p in all_problems()]
    con.table(["#", "id", con.t("title"), con.t("difficulty"), con.t("runs on"), con.t("status")],
              rows)
    if IN_PACKAGE:
        for gone in _bundle().left_out:
            con.print(con.c(con.t("not in this package: {name} ({why})", name=gone.get("name"),
                                  why=gone.get("why")), "dim"))
    return 0


def cmd_start(args, con: Console) -> int:
    p = find_problem(args.problem)
    dest = work_file(p)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        con.print(con.t("{path} already exists; it was left as it is.", path=dest))
    else:
        shutil.copyfile(p.starter_path, dest)
    con.print(p.statement(con.lang))
    con.print(con.c(con.t("Your file: {path}", path=dest), "bold"))
    con.print(con.t("Next: edit it, then run  {me} test {id}", me=ME, id=p.id))
    return 0


# ---- test ----------------------------------------------------------------------------------

def cmd_test(args, con: Console) -> int:
    p = find_problem(args.problem)
    path = Path(args.file) if args.file else work_file(p)
    source = read_source(path, p)
    if args.remote:
        return _test_remote(args, con, p, source)
    data = _test_here(args, con, p, source)
    whole = IN_PACKAGE or not (args.run or args.public)
    if not args.file and whole:
        _save_last(p, data)
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=1))
    else:
        print_report(con, data, trace_steps=None if args.trace else 4,
                     labels=labels_of(p, con.lang), context=context_for(p, path, con.lang))
        _after_report(con, p, data, whole)
    return 0 if data.get("verdict") == "AC" else 1


def _test_here(args, con: Console, p, source: str) -> dict:
    if IN_PACKAGE:
        return _test_in_package(p, source)
    from judge.grading.grader import grade
    select = [x.name for x in p.examples()] if args.run else None
    if select is not None and args.public:
        select = [n for n in select if n.startswith("public/")]
    report = grade(p, source, suite="public" if args.public else "all", device=args.device,
                   select=select, on_event=None if args.json else Progress(con))
    return report.to_dict()


def _test_in_package(p, source: str) -> dict:
    """The page's Run, here: every test of a package is public."""
    import importlib.util

    from judge.handout.local_run import run_public
    if importlib.util.find_spec("pytest") is None:
        raise Refusal("pytest_missing", translate(
            "pytest is not installed: python -m pip install \"pytest>=8.0\"", LANG[0]))
    data = run_public(p.spec(source), LIB, float(p.meta.get("run_timeout_s") or 120),
                      workspace() / ".runs")
    data.pop("observations", None)
    if data.get("verdict") == "unsupported":
        raise Refusal("module_missing", translate(
            "Your file imports a module this Python does not have ({why}): install it, or "
            "submit: the server has it", LANG[0], why=data.get("unsupported")))
    return data


def _after_report(con: Console, p, data: dict, whole: bool) -> None:
    if IN_PACKAGE and p.meta.get("expected") is None:  # the page says the same under its Run
        con.print(con.c(con.t("The reference's observations are not available, so only the "
                              "tests' own assertions were checked."), "yellow"))
    if data.get("verdict") != "AC" or not whole:
        return
    if IN_PACKAGE:
        con.print(con.t("Every public test passes. Next:  {me} submit {id}  (the hidden tests "
                        "run on the server)", me=ME, id=p.id))
        return
    text = p.explanation(con.lang)  # imported problems: earned by a full AC
    if text:
        con.print("\n" + con.c(con.t("Accepted. The problem's explanation:"), "bold") + "\n")
        con.print(text.rstrip())


def _test_remote(args, con: Console, problem, source: str) -> int:
    """Submit to a server as an anonymous visitor: the full suite runs there."""
    from web.client import PlatformClient, RemoteError

    if args.run or args.public:
        raise Refusal("local_options", "--run and --public are local options; a server grades "
                      "the full suite")
    client = PlatformClient(args.remote, token_file=workspace() / ".remote-tokens.json")
    try:
        sid = client.submit(problem.id, source)
        if not args.json:
            con.print(f"submitted to {args.remote} as #{sid}")
        data = client.follow(sid, on_event=None if args.json else Progress(con))
    except RemoteError as e:
        raise Refusal("remote_error", str(e)) from None
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=1))
    else:
        print_report(con, data, trace_steps=None if args.trace else 4,
                     labels=labels_of(problem, con.lang))
    return 0 if data.get("verdict") == "AC" else 1


def _save_last(problem, data: dict) -> None:
    """The last verdict (for `list`) and the hints it met (for `hint`)."""
    path = last_result_path(problem)
    ff = data.get("first_failure") or {}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"verdict": data.get("verdict"), "score": data.get("score"),
                                    "time": time.time(), "test": ff.get("test"),
                                    "hints": data.get("hints") or []}), encoding="utf-8")
        shown_path(problem).unlink(missing_ok=True)  # a new failure: its hints from the first
    except (OSError, TypeError, ValueError):
        pass


# ---- hint ----------------------------------------------------------------------------------

def cmd_hint(args, con: Console) -> int:
    """One more level of the hints the last failure met, as the page's "Show a hint"."""
    p = find_problem(args.problem)
    try:
        last = json.loads(last_result_path(p).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        con.print(con.t("No result yet: run  {me} test {id}  first", me=ME, id=p.id))
        return 1
    if last.get("verdict") == "AC":
        con.print(con.t("Your last result was accepted: no hint needed."))
        return 0
    steps = hint_steps(last.get("hints") or [], con.lang)
    if not steps:
        con.print(con.t("No hint is written for this failure ({test}): the first divergence "
                        "above it is the clue.", test=last.get("test") or "-"))
        return 0
    try:
        shown = int(json.loads(shown_path(p).read_text(encoding="utf-8")).get("shown", 1))
    except (OSError, ValueError, AttributeError):
        shown = 1  # `test` printed the first one
    shown = min(len(steps), shown + 1)
    ctx = FailureContext(statement=p.statement(con.lang), hint_command=f"{ME} hint {p.id}")
    for line in hint_lines(last["hints"], shown, ctx, con.lang):
        con.print(line)
    try:
        shown_path(p).write_text(json.dumps({"shown": shown}), encoding="utf-8")
    except OSError:
        pass
    return 0


# ---- login, submit -------------------------------------------------------------------------

def server_of(args) -> str:
    """--server, else the package's server, else $KVPRACTICE_SERVER."""
    server = getattr(args, "server", None) or (_bundle().server if IN_PACKAGE else None) or \
        os.environ.get("KVPRACTICE_SERVER")
    if not server:
        raise Refusal("no_server", translate(
            "Which server? Give it with --server URL (a package made by a server knows it)",
            LANG[0]))
    from web.token_store import server_key
    try:
        return server_key(server)
    except ValueError as e:
        raise Refusal("bad_server", str(e)) from None


def cmd_login(args, con: Console) -> int:
    from web import token_store
    from web.submit_client import SubmitClient, SubmitError
    server = server_of(args)
    if server.startswith("http://") and not _loopback(server):
        con.print(con.c(con.t("Warning: {server} is not HTTPS, so the token travels unencrypted.",
                              server=server), "yellow"))
    token = _ask_token(con, server)
    try:
        me = SubmitClient(server, token, con.lang).whoami()
    except SubmitError as e:
        raise Refusal("login_failed", _said(con, server, e)) from None
    if not me.get("account"):
        raise Refusal("not_a_token", con.t(
            "{server} does not know this as a personal token: make one on {server}/account",
            server=server))
    path = token_store.save(server, token)
    con.print(con.t("Signed in to {server} as {name}. The token is kept in {path} (only you can "
                    "read it).", server=server, name=me["account"], path=path))
    return 0


def _ask_token(con: Console, server: str) -> str:
    if sys.stdin.isatty():
        import getpass
        token = getpass.getpass(con.t("Personal token from {server}/account: ", server=server))
    else:
        token = sys.stdin.readline(4096)
    token = token.strip()
    if not token:
        raise Refusal("no_token", con.t("No token given: make one on {server}/account",
                                        server=server))
    return token


def _loopback(server: str) -> bool:
    from urllib.parse import urlsplit
    return (urlsplit(server).hostname or "") in ("localhost", "127.0.0.1", "::1")


def cmd_logout(args, con: Console) -> int:
    from web import token_store
    server = server_of(args)
    gone = token_store.forget(server)
    con.print(con.t("Signed out of {server}.", server=server) if gone else
              con.t("You were not signed in to {server}.", server=server))
    return 0


def _said(con: Console, server: str, e) -> str:
    """A failed call in the student's words, saying that nothing was submitted."""
    from web.submit_client import Refused, Unreachable
    if isinstance(e, Unreachable):
        return con.t("Cannot reach {server} ({why}). Nothing was sent.", server=server, why=e)
    if isinstance(e, Refused) and e.status == 401:
        return con.t("{server} refused your token ({why}): make a new one on {server}/account "
                     "and run  {me} login", server=server, why=e.message, me=ME)
    if isinstance(e, Refused):
        wait = f" (Retry-After: {e.retry_after} s)" if e.retry_after else ""
        return con.t("{server} refused it: {why}", server=server, why=e.message + wait)
    return str(e)


def cmd_submit(args, con: Console) -> int:
    from web import token_store
    from web.submit_client import SubmitClient, SubmitError
    p = find_problem(args.problem)
    path = Path(args.file) if args.file else work_file(p)
    source = read_source(path, p)
    server = server_of(args)
    token = token_store.load(server)
    if not token:
        raise Refusal("not_signed_in", con.t(
            "Not signed in to {server}: make a personal token on {server}/account, then run  "
            "{me} login", server=server, me=ME))
    client = SubmitClient(server, token, con.lang)
    try:
        created = client.submit(p.id, source)
    except SubmitError as e:
        raise Refusal("not_submitted", _said(con, server, e) + " " + con.t(
            "Your file {path} is unchanged.", path=path)) from None
    return _follow(args, con, client, p, path, created)


def _follow(args, con: Console, client, p, path: Path, created: dict) -> int:
    from judge.cli.live_text import LiveLines
    from web.submit_client import SubmitError
    sid, url = created["id"], f"{client.server}/submissions/{created['id']}"
    if not args.json:
        con.print(con.t("Submitted {path} as #{id}: {url}", path=path, id=sid, url=url))
    live = None if args.json else LiveLines(con)
    try:
        data = client.follow(sid, on_event=live)
    except SubmitError as e:
        raise Refusal("not_followed", con.t(
            "Submission #{id} is stored and will be graded, but its progress stopped arriving "
            "({why}): see {url}", id=sid, why=e, url=url)) from None
    _save_last(p, data)
    if args.json:
        print(json.dumps(data, ensure_ascii=False, indent=1))
        return 0 if data.get("verdict") == "AC" else 1
    con.print()
    print_report(con, data, labels=labels_of(p, con.lang), context=context_for(p, path, con.lang),
                 table=not (live and live.finished))
    if IN_PACKAGE and data.get("verdict") == "AC" and p.meta.get("has_explanation"):
        con.print(con.t("Accepted: the problem's explanation is open on its page now: {url}",
                        url=f"{client.server}/problems/{p.id}"))
    version = (data.get("problem") or {}).get("version")
    if IN_PACKAGE and version and version != p.version:
        con.print(con.c(con.t("This problem changed on the server since your package was made: "
                              "download it again for its current public tests."), "yellow"))
    return 0 if data.get("verdict") == "AC" else 1


# ---- the checkout's verbs ------------------------------------------------------------------

def cmd_doctor(args, con: Console) -> int:
    from judge.cli.console import print_doctor
    from judge.grading.environment import doctor_info

    print_doctor(con, doctor_info())
    return 0


def cmd_check(args, con: Console) -> int:
    from judge.authoring.check import check_problem
    from judge.cli.console import print_check

    problems = [find_problem(n) for n in args.problems] if args.problems else all_problems()
    ok = True
    for p in problems:
        res = check_problem(p, device=args.device)
        print_check(con, res)
        ok = ok and res.ok
    return 0 if ok and problems else 1


def cmd_solution(args, con: Console) -> int:
    p = find_problem(args.problem)
    con.print(con.t("Solutions are not shown for graded problems (they have hidden tests). "
                    "`test {id}` tells you where your code first differs from the reference.",
                    id=p.id))
    return 0


# ---- the command line ----------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--lang", choices=["en", "zh"], help="language (default: from locale)")
    ap = argparse.ArgumentParser(prog="judge.py", description="The handbook's practice tool.")
    sub = ap.add_subparsers(dest="verb", required=True)
    sub.add_parser("list", parents=[common], help="list the problems")
    sub.add_parser("start", parents=[common], help="start a problem").add_argument("problem")
    te = sub.add_parser("test", parents=[common], help="grade your solution")
    te.add_argument("problem")
    te.add_argument("file", nargs="?")
    te.add_argument("--public", action="store_true", help="only the public tests")
    te.add_argument("--run", action="store_true", help="only the examples (a package runs "
                    "every public test, as the page's Run)")
    te.add_argument("--json", action="store_true", help="print only JSON")
    te.add_argument("--trace", action="store_true", help="the first failure's whole pool "
                    "timeline (default: its last 4 steps)")
    te.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    te.add_argument("--remote", metavar="URL", help="grade on a platform server as an anonymous "
                    "visitor (`submit` counts for your account)")
    sub.add_parser("hint", parents=[common], help="a hint for your last failure"
                   ).add_argument("problem")
    for verb, text in (("login", "keep a personal token"), ("logout", "forget it")):
        sub.add_parser(verb, parents=[common], help=text).add_argument("--server", metavar="URL")
    su = sub.add_parser("submit", parents=[common], help="the server grades it (hidden tests)")
    su.add_argument("problem")
    su.add_argument("file", nargs="?")
    su.add_argument("--server", metavar="URL")
    su.add_argument("--json", action="store_true", help="print only JSON")
    sub.add_parser("doctor", parents=[common], help="what this machine can run (checkout)")
    c = sub.add_parser("check", parents=[common], help="maintainers: prove problems sound")
    c.add_argument("problems", nargs="*")
    c.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    sub.add_parser("solution", parents=[common], help="about solutions").add_argument("problem")
    return ap


HANDLERS = {"list": cmd_list, "start": cmd_start, "test": cmd_test, "hint": cmd_hint,
            "login": cmd_login, "logout": cmd_logout, "submit": cmd_submit,
            "doctor": cmd_doctor, "check": cmd_check, "solution": cmd_solution}


def _errors() -> tuple:
    if IN_PACKAGE:
        return (ValueError, OSError)
    from judge.problem import ProblemError
    return (ProblemError, ValueError, OSError)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in VERBS and not argv[0].startswith("-"):
        argv.insert(0, "test")  # `judge.py 143` = `judge.py test 143`
    args = build_parser().parse_args(argv)
    con = Console(args.lang)
    LANG[0] = con.lang
    try:
        if IN_PACKAGE and args.verb in CHECKOUT_ONLY:
            raise Refusal("checkout_only", con.t(
                "`{verb}` needs a checkout of the repository (it runs the references)",
                verb=args.verb))
        return HANDLERS[args.verb](args, con)
    except Refusal as e:
        return _refused(args, e)
    except _errors() as e:
        return _refused(args, Refusal("error", str(e)))


def _refused(args, e: Refusal) -> int:
    """One line on stderr, or with --json the same as a JSON object on stdout."""
    if getattr(args, "json", False):
        print(json.dumps({"error": {"code": e.code, "message": e.message}}, ensure_ascii=False))
    else:
        print(e.message, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
