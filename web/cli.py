"""Command line of the web platform: the `judge` console script's serve, worker, regrade and parity
(`judge_main` hands the core's verbs to judge.cli.main).

    python -m web.cli serve [--host 127.0.0.1] [--port 8000] [--data DIR] [--workers N]
    python -m web.cli worker [--data DIR] [--workers N]     # extra grading processes
    python -m web.cli serve --queue redis://H:6379/0 --db postgresql://... --worker-token T
    python -m web.cli worker --queue redis://H:6379/0 --server http://H:8000 [--device auto]
    python -m web.cli regrade PROBLEM [--server URL | --db URL]
    python -m web.cli parity PROBLEM FILE [--server URL]

`serve` runs the site, the API and an embedded pool of grading workers on a SQLite database and
queue in the data directory. It builds nothing: when the front-end build is missing it stops and
names the command that makes it. `worker` runs only grading workers against the same data
directory (or database URL), e.g. on another core.

Distributed mode: `serve --queue redis://...` enqueues grading jobs in Redis (and runs no
grading worker itself unless --workers says so); `worker --queue redis://... --server URL` runs
on any machine with the project installed, takes jobs from Redis and talks to the server's
worker API with the worker token (it holds no database credentials).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from judge.sandbox.policy import weak_sandbox_refusal
from web.settings import BUILD_COMMAND, Settings

WEAK_SANDBOX_FLAG = "--allow-weak-sandbox"


def _refuse(args, command: str) -> bool:
    """True (after saying why) when this process would grade others' code on a weak sandbox."""
    if args.allow_weak_sandbox:
        return False
    why = weak_sandbox_refusal(command, WEAK_SANDBOX_FLAG)
    if why:
        print(why, file=sys.stderr)
    return why is not None


def _default_workers() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=Path, help="data directory (default: <repo>/data)")
    p.add_argument("--database-url", "--db", dest="database_url", metavar="URL",
                   help="SQLAlchemy URL, e.g. postgresql://user:pw@host/db (default: SQLite in "
                   "the data dir)")
    p.add_argument("--queue", metavar="URL", help="redis://HOST:PORT/N: the grading queue in "
                   "Redis, for workers on other hosts (default: embedded, SQLite in the data dir)")
    p.add_argument("--workers", type=int, default=None,
                   help=f"grading workers (default: {_default_workers()}: half the cores)")
    p.add_argument("--problems", type=Path, help="problem bank folder (default: <repo>/problems)")
    p.add_argument("--reference", type=Path, help="handbook modules folder "
                   "(default: <repo>/reference)")
    p.add_argument("--grader", help="'module:function' used instead of judge.grade (tests)")
    p.add_argument(WEAK_SANDBOX_FLAG, action="store_true",
                   help="grade even where the sandbox has no private filesystem view (no "
                   "bubblewrap): only for code you trust")
    p.add_argument("--max-queued-per-address", type=int, metavar="N",
                   help="students' submissions queued or being graded at once from one client "
                   "address (default 10; raise it where many students share one address)")
    p.add_argument("--rate-limit-per-address", type=int, metavar="N",
                   help="submissions per minute from one client address (default 60)")
    p.add_argument("--lease-s", type=float, help=argparse.SUPPRESS)
    p.add_argument("--heartbeat-s", type=float, help=argparse.SUPPRESS)
    p.add_argument("--reaper-interval-s", type=float, help=argparse.SUPPRESS)


def _settings(args) -> Settings:
    kw = {}
    if args.data:
        kw["data_dir"] = args.data.resolve()
    if args.database_url:
        kw["database_url"] = args.database_url
    if args.queue:
        kw["queue_url"] = args.queue
    if getattr(args, "worker_token", None):
        kw["worker_token"] = args.worker_token
    if args.problems:
        kw["problems_dir"] = args.problems.resolve()
    if args.reference:
        kw["reference_dir"] = args.reference.resolve()
    for name in ("lease_s", "heartbeat_s", "reaper_interval_s", "max_queued_per_address",
                 "rate_limit_per_address"):
        if getattr(args, name) is not None:
            kw[name] = getattr(args, name)
    if getattr(args, "instructor_token", None):
        kw["instructor_token"] = args.instructor_token
    if getattr(args, "forwarded_allow_ips", None):
        kw["forwarded_allow_ips"] = args.forwarded_allow_ips
    return Settings(**kw)


def serve(args) -> int:
    from web.app import create_app, front_end_build
    from web.jobs.graders import judge_available, load_grader

    build = front_end_build()
    if not build["ok"] and not args.skip_build_check:
        print("The front-end build is missing:\n  " + "\n  ".join(build["missing"])
              + f"\nBuild it once with:\n  {BUILD_COMMAND}\n(npm ci, the esbuild bundle, Pyodide "
              "and the browser-side wheels; it needs the npm registry and PyPI once).",
              file=sys.stderr)
        return 2
    settings = _settings(args)
    if args.workers is not None:
        workers = args.workers
    else:  # distributed: the workers run elsewhere
        workers = 0 if settings.distributed else _default_workers()
    if workers > 0 and _refuse(args, "serve"):
        return 2
    if not args.grader:
        ok, why = judge_available()
        if not ok:
            print(f"warning: the grading core does not import ({why}); submissions will be "
                  "answered IE until it does", file=sys.stderr)
    if settings.distributed and not settings.worker_token:
        print("warning: no --worker-token (or $KVPRACTICE_WORKER_TOKEN): workers on other "
              "hosts cannot report results", file=sys.stderr)
    if workers > 0:  # embedded workers grade many files: fork them from warm zygotes
        from judge.grading.warm_pool import use_by_default
        use_by_default()
    app = create_app(settings, grader=load_grader(args.grader), workers=workers)
    if workers > 0 and not args.grader:  # the bank's zygotes, started behind the server's start
        from judge.grading.warm_pool import prewarm
        from judge.problem import ProblemBank
        try:
            prewarm(ProblemBank(settings.problems_dir, settings.reference_dir).list())
        except Exception as exc:  # noqa: BLE001 - the first gradings start them instead
            print(f"warning: warm graders not started ahead ({exc})", file=sys.stderr)

    import uvicorn

    from web.jobs.queue import redact_url
    from web.store.db import engine_url
    where = (f"queue {redact_url(settings.queue_url)}, database "
             f"{redact_url(engine_url(settings.db_url))}" if settings.distributed
             else f"data: {settings.data_dir}")
    print(f"Serving on http://{args.host}:{args.port}/  ({where}, "
          f"{workers} grading worker{'s' if workers != 1 else ''} in this process)", flush=True)
    uvicorn.run(app, **uvicorn_options(args))
    return 0


def uvicorn_options(args) -> dict:
    """How `judge serve` runs uvicorn. Proxy headers are the app's business (Settings.
    forwarded_allow_ips, web.app), never uvicorn's default trust of 127.0.0.1."""
    return {"host": args.host, "port": args.port, "log_level": args.log_level,
            "timeout_graceful_shutdown": 5, "proxy_headers": False, "forwarded_allow_ips": ""}


def worker(args) -> int:
    from judge.grading.warm_pool import use_by_default

    use_by_default()  # a worker grades many files: fork them from warm zygotes
    if args.server:
        return remote_worker(args)
    if _refuse(args, "worker"):
        return 2
    from judge.problem import ProblemBank
    from web.jobs.graders import load_grader
    from web.jobs.system import JobSystem
    from web.store.db import Database

    settings = _settings(args)
    db = Database(settings.db_url)
    db.create_all()
    jobs = JobSystem(settings, db, ProblemBank(settings.problems_dir, settings.reference_dir),
                     load_grader(args.grader))
    n = _default_workers() if args.workers is None else args.workers
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    jobs.start_workers(n)
    print(f"{n} grading worker(s) on {settings.db_url}", flush=True)
    stop.wait()
    jobs.stop()
    return 0


def remote_worker(args) -> int:
    """`worker --server URL`: a worker on any host, no database credentials."""
    from judge.grading.warm_grader import WarmGrader
    from judge.problem import ProblemBank
    from web.jobs.graders import judge_grader, load_grader
    from web.jobs.remote_worker import RemoteWorker

    if not args.queue:
        print("a remote worker needs --queue redis://HOST:PORT/N (the server's queue)",
              file=sys.stderr)
        return 2
    if args.database_url:
        print("a remote worker holds no database credentials: drop --db", file=sys.stderr)
        return 2
    token = args.worker_token or os.environ.get("KVPRACTICE_WORKER_TOKEN")
    if args.worker_token_file:
        token = Path(args.worker_token_file).read_text().strip()
    if not token:
        print("a remote worker needs the server's worker token: $KVPRACTICE_WORKER_TOKEN, "
              "--worker-token-file FILE or --worker-token T", file=sys.stderr)
        return 2
    if _refuse(args, "worker"):  # after the usage errors, before any grading is prepared
        return 2
    settings = _settings(args)
    catalog = ProblemBank(settings.problems_dir, settings.reference_dir)
    grader = load_grader(args.grader)
    warm, gpu = None, None
    if grader is judge_grader:
        try:
            grader = WarmGrader(args.device)
        except ValueError as exc:  # --device cuda without a CUDA device
            print(f"error: {exc}", file=sys.stderr)
            return 2
        device, gpu = grader.device, grader.gpu_name
        if not args.no_warm:
            warm = lambda: grader.warm(catalog, logging.getLogger("web.worker"))  # noqa: E731
    else:  # a test's stand-in grader: it says which device it pretends to be
        device = args.pretend_device or ("cpu" if args.device == "auto" else args.device)
    slots = args.jobs or 1
    if device == "cuda" and slots > 1:
        print("a CUDA worker grades one job at a time (one per GPU): start one worker per GPU "
              "with CUDA_VISIBLE_DEVICES=N instead of --jobs", file=sys.stderr)
        return 2
    from judge import JUDGE_VERSION
    w = RemoteWorker(queue_url=args.queue, server=args.server, token=token, catalog=catalog,
                     grader=grader, device=device, gpu_name=gpu, slots=slots, warm=warm,
                     version=JUDGE_VERSION)
    return w.run()


# The `judge` console script's verbs that live here; the rest are the grading core's.
JUDGE_VERBS = {"serve": "run the web platform (site, API, embedded workers)",
               "worker": "run grading workers only (--server URL: on another host)",
               "regrade": "re-grade every counted submission of a problem",
               "parity": "grade a file on CPU and on a GPU worker, compare"}


def judge_main(argv: list[str] | None = None) -> int:
    """The `judge` console script (and `python -m web`): the platform's verbs here, the core's
    (grade, check, new, import, list, doctor) in judge.cli.main, with the same options as ever."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in JUDGE_VERBS:
        return main(argv)
    from judge.cli.main import main as core_main
    return core_main(argv, front_end_verbs=JUDGE_VERBS)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="judge", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ps = sub.add_parser("serve", help="the site, the API and embedded grading workers")
    ps.add_argument("--host", default="127.0.0.1")
    ps.add_argument("--port", type=int, default=8000)
    ps.add_argument("--instructor-token", help="instructor token (default: "
                    "$KVPRACTICE_INSTRUCTOR_TOKEN)")
    ps.add_argument("--worker-token", help="the token workers on other hosts send (default: "
                    "$KVPRACTICE_WORKER_TOKEN); without one the worker API is off")
    ps.add_argument("--log-level", default="info")
    ps.add_argument("--forwarded-allow-ips", metavar="IPS",
                    help="the reverse proxies (comma-separated addresses, or '*') whose "
                    "X-Forwarded-For and X-Forwarded-Proto are believed (default: none; the "
                    "client address is the connection's)")
    ps.add_argument("--skip-build-check", action="store_true",
                    help="start even without the front-end build (API only)")
    _common(ps)
    pw = sub.add_parser("worker", help="grading workers only")
    _common(pw)
    pw.add_argument("--server", metavar="URL", help="the web server's URL: run as a remote "
                    "worker that reports through its API (needs --queue and the worker token)")
    pw.add_argument("--worker-token", help="the server's worker token (prefer "
                    "$KVPRACTICE_WORKER_TOKEN or --worker-token-file: a command line is "
                    "visible to other users of the host)")
    pw.add_argument("--worker-token-file", metavar="FILE")
    pw.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                    help="remote worker: where submissions run (auto: CUDA when present)")
    pw.add_argument("--jobs", type=int, help="remote CPU worker: jobs at once (default 1; a "
                    "CUDA worker always grades one at a time)")
    pw.add_argument("--no-warm", action="store_true", help="remote worker: skip preparing the "
                    "reference observations of every problem at start")
    pw.add_argument("--pretend-device", choices=["cpu", "cuda"], help=argparse.SUPPRESS)
    from web.ops_cli import add_parsers
    add_parsers(sub)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                        "%(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    if args.command == "serve":
        return serve(args)
    if args.command == "worker":
        return worker(args)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
