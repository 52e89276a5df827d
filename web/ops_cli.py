"""Operators' commands of distributed grading (`judge regrade`, `judge parity`).

    judge regrade PROBLEM [--server URL | --db URL [--queue URL]] [--no-wait] [--json]
    judge parity PROBLEM FILE [--server URL] [--json]

`regrade` re-grades every submission of PROBLEM a gradebook counts at low priority and prints the
per-student verdict diff (AC->WA, ...); the new results stay hidden until an instructor approves
them (instructor page, or POST /api/instructor/regrades/ID/approve). Through the server's API
(instructor token: --token or $KVPRACTICE_INSTRUCTOR_TOKEN), or straight into the database (the
server's reaper then queues the jobs).

`parity` grades FILE on CPU here and on a GPU worker of the server, and compares the per-test
verdicts: PARITY (exit 1) when they differ, SAME (exit 0) when not, exit 3 without a GPU worker.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from judge.authoring.parity import compare_devices, parity_lines
from web.services.names import terminal_safe

EXIT_OK, EXIT_DIFFER, EXIT_USAGE, EXIT_NO_GPU = 0, 1, 2, 3
DEFAULT_SERVER = "http://127.0.0.1:8000"


def add_parsers(sub) -> None:
    r = sub.add_parser("regrade", help="re-grade every counted submission of a "
                       "problem; the verdict diff awaits an instructor's approval")
    r.add_argument("problem")
    r.add_argument("--server", metavar="URL", help=f"through this server (default "
                   f"{DEFAULT_SERVER} unless --db is given)")
    r.add_argument("--db", metavar="URL", help="straight into this database instead")
    r.add_argument("--queue", metavar="URL", help="with --db: also enqueue the jobs here "
                   "(otherwise the server's reaper does within seconds)")
    r.add_argument("--problems", type=Path, help="problem bank (with --db; default <repo>/"
                   "problems)")
    _client_args(r)
    r.add_argument("--no-wait", action="store_true", help="start it and return")
    r.set_defaults(run=regrade_cmd)
    p = sub.add_parser("parity", help="grade a file on CPU here and on a GPU worker; PARITY "
                       "when the per-test results differ")
    p.add_argument("problem")
    p.add_argument("file")
    p.add_argument("--server", metavar="URL", default=DEFAULT_SERVER)
    p.add_argument("--problems", type=Path, help="problem bank for the local CPU grading")
    _client_args(p)
    p.set_defaults(run=parity_cmd)


def _client_args(p) -> None:
    p.add_argument("--token", help="instructor token (default $KVPRACTICE_INSTRUCTOR_TOKEN)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for the "
                   "grading (default 3600)")
    p.add_argument("--json", action="store_true", help="print JSON only")


def _api(server: str, token: str | None):
    """(status, body) of one call to the instructor API (the platform's one HTTP client)."""
    from web.client import INSTRUCTOR_HEADER, ApiClient
    return ApiClient(server, {INSTRUCTOR_HEADER: token or ""}).exchange


def _token(args) -> str | None:
    return args.token or os.environ.get("KVPRACTICE_INSTRUCTOR_TOKEN")


def _fail(msg: str, code: int = EXIT_DIFFER) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return code


# ---------------------------------------------------------------- regrade


def regrade_cmd(args) -> int:
    if args.db and args.server:
        return _fail("give --server or --db, not both", EXIT_USAGE)
    if args.db:
        return _regrade_db(args)
    api = _api(args.server or DEFAULT_SERVER, _token(args))
    try:
        status, data = api("POST", "/api/instructor/regrades", {"problem": args.problem})
    except Exception as exc:
        return _fail(f"{args.server or DEFAULT_SERVER}: {exc}")
    if status != 202:
        return _fail(data.get("error", {}).get("message", str(data)))

    def poll():
        s, d = api("GET", f"/api/instructor/regrades/{data['id']}")
        if s != 200:
            raise RuntimeError(d.get("error", {}).get("message", str(d)))
        return d
    return _follow(args, data, poll)


def _regrade_db(args) -> int:
    from judge.problem import ProblemBank
    from web.jobs import regrades
    from web.jobs.queue import JobQueue
    from web.settings import Settings
    from web.store.db import Database

    st = Settings(**({"problems_dir": args.problems} if args.problems else {}))
    p = ProblemBank(st.problems_dir, st.reference_dir).get(args.problem)
    if p is None and not args.problem.isdigit():
        return _fail(f"there is no problem '{args.problem}' in {st.problems_dir} (--problems)",
                     EXIT_USAGE)
    db = Database(args.db)
    db.create_all()
    enqueue = JobQueue(args.queue).enqueue if args.queue else None
    try:
        data = regrades.start(db, p.id if p else args.problem, enqueue)
    except regrades.RegradeError as exc:
        return _fail(exc.message)
    return _follow(args, data, lambda: regrades.summary(db, data["id"]))


def _follow(args, data: dict, poll) -> int:
    if not args.json:
        print(f"regrade #{data['id']} of problem {data['problem']}: {data['total']} student(s)"
              , flush=True)
    deadline = time.monotonic() + args.timeout
    shown = -1
    while not args.no_wait and data["state"] == "grading" and time.monotonic() < deadline:
        time.sleep(1.0)
        data = poll()
        if not args.json and data["graded"] != shown:
            shown = data["graded"]
            print(f"  graded {data['graded']}/{data['total']}", flush=True)
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        print_regrade(data)
    return EXIT_OK if args.no_wait or data["state"] != "grading" else EXIT_DIFFER


def print_regrade(data: dict) -> None:
    # names are the students' own words: escaped, so none can drive the instructor's terminal
    rows = [tuple(terminal_safe(c) for c in (
        it["display_name"] or f"#{it['visitor']}", f"#{it['submission']}",
        it["old"]["verdict"] or "-", it["new"]["verdict"] or it["new"]["status"],
        it["change"] or "")) for it in data.get("items", [])]
    head = ("student", "submission", "before", "after", "change")
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    for r in [head] + rows:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)))
    changes = ", ".join(f"{k}: {n}" for k, n in data["changes"].items()) or "none"
    print(f"{data['graded']}/{data['total']} graded; {data['changed']} changed ({changes}).")
    if data["status"] == "pending":
        print(f"Students still see their old results until an instructor approves regrade "
              f"#{data['id']} (instructor page, or POST /api/instructor/regrades/{data['id']}"
              "/approve).")


# ---------------------------------------------------------------- parity


def parity_cmd(args) -> int:
    try:
        source = Path(args.file).read_text(encoding="utf-8")
    except OSError as exc:
        return _fail(f"{args.file}: {exc.strerror}", EXIT_USAGE)
    api = _api(args.server, _token(args))
    try:
        status, data = api("POST", "/api/instructor/parity", {"problem": args.problem,
                                                              "code": source})
    except Exception as exc:
        return _fail(f"{args.server}: {exc}")
    if status == 409 and data.get("error", {}).get("code") == "no_gpu_worker":
        print(f"NO GPU WORKER: {data['error']['message']}. The parity check needs one; "
              "nothing was compared.", file=sys.stderr)
        return EXIT_NO_GPU
    if status != 202:
        return _fail(data.get("error", {}).get("message", str(data)))
    from judge import grade, load_problem  # the CPU side, here, meanwhile

    if not args.json:
        print(f"grading on CPU here and on the GPU worker (job #{data['id']})...", flush=True)
    cpu = grade(load_problem(args.problem, args.problems), source, device="cpu").to_dict()
    deadline = time.monotonic() + args.timeout
    while True:
        s, sub = api("GET", f"/api/instructor/submissions/{data['id']}")
        if s == 200 and sub["status"] == "done":
            break
        if time.monotonic() > deadline:
            return _fail(f"the GPU grading (job #{data['id']}) did not finish in "
                         f"{args.timeout:.0f} s")
        time.sleep(0.5)
    gpu = sub["report"] or {}
    result = dict(compare_devices(cpu, gpu), job=data["id"])
    print(json.dumps(result, indent=1) if args.json else "\n".join(parity_lines(result)))
    return EXIT_DIFFER if result["differences"] else EXIT_OK
