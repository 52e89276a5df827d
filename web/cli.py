"""Command line of the web platform.

    python -m web.cli serve [--host 127.0.0.1] [--port 8000] [--data DIR] [--workers N]
    python -m web.cli worker [--data DIR] [--workers N]     # extra grading processes

`serve` runs the site, the API and an embedded pool of grading workers on a SQLite database and
queue in the data directory. It builds nothing: when the front-end build is missing it stops and
names the command that makes it. `worker` runs only grading workers against the same data
directory (or database URL), e.g. on another core or, with a shared database, another host.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from .settings import BUILD_COMMAND, Settings


def _default_workers() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", type=Path, help="data directory (default: <repo>/data)")
    p.add_argument("--database-url", help="SQLAlchemy URL (default: SQLite in the data dir)")
    p.add_argument("--workers", type=int, default=None,
                   help=f"grading workers (default: {_default_workers()}: half the cores)")
    p.add_argument("--problems", type=Path, help="problem bank folder (default: <repo>/problems)")
    p.add_argument("--reference", type=Path, help="handbook modules folder "
                   "(default: <repo>/reference)")
    p.add_argument("--grader", help="'module:function' used instead of judge.grade (tests)")
    p.add_argument("--lease-s", type=float, help=argparse.SUPPRESS)
    p.add_argument("--heartbeat-s", type=float, help=argparse.SUPPRESS)
    p.add_argument("--reaper-interval-s", type=float, help=argparse.SUPPRESS)


def _settings(args) -> Settings:
    kw = {}
    if args.data:
        kw["data_dir"] = args.data.resolve()
    if args.database_url:
        kw["database_url"] = args.database_url
    if args.problems:
        kw["problems_dir"] = args.problems.resolve()
    if args.reference:
        kw["reference_dir"] = args.reference.resolve()
    for name in ("lease_s", "heartbeat_s", "reaper_interval_s"):
        if getattr(args, name) is not None:
            kw[name] = getattr(args, name)
    if getattr(args, "instructor_token", None):
        kw["instructor_token"] = args.instructor_token
    return Settings(**kw)


def serve(args) -> int:
    from .app import create_app, front_end_build
    from .grading import judge_available, load_grader

    build = front_end_build()
    if not build["ok"] and not args.skip_build_check:
        print("The front-end build is missing:\n  " + "\n  ".join(build["missing"])
              + f"\nBuild it once with:\n  {BUILD_COMMAND}\n(npm ci, the esbuild bundle, Pyodide "
              "and the browser-side wheels; it needs the npm registry and PyPI once).",
              file=sys.stderr)
        return 2
    settings = _settings(args)
    if not args.grader:
        ok, why = judge_available()
        if not ok:
            print(f"warning: the grading core does not import ({why}); submissions will be "
                  "answered IE until it does", file=sys.stderr)
    workers = _default_workers() if args.workers is None else args.workers
    app = create_app(settings, grader=load_grader(args.grader), workers=workers)

    import uvicorn
    print(f"Serving on http://{args.host}:{args.port}/  (data: {settings.data_dir}, "
          f"{workers} grading worker{'s' if workers != 1 else ''})", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level,
                timeout_graceful_shutdown=5)
    return 0


def worker(args) -> int:
    from .db import Database
    from .grading import load_grader
    from .jobs import JobSystem
    from .problems import Catalog

    settings = _settings(args)
    db = Database(settings.db_url)
    db.create_all()
    jobs = JobSystem(settings, db, Catalog(settings.problems_dir, settings.reference_dir),
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m web.cli", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ps = sub.add_parser("serve", help="the site, the API and embedded grading workers")
    ps.add_argument("--host", default="127.0.0.1")
    ps.add_argument("--port", type=int, default=8000)
    ps.add_argument("--instructor-token", help="instructor token (default: "
                    "$KVPRACTICE_INSTRUCTOR_TOKEN)")
    ps.add_argument("--log-level", default="info")
    ps.add_argument("--skip-build-check", action="store_true",
                    help="start even without the front-end build (API only)")
    _common(ps)
    pw = sub.add_parser("worker", help="grading workers only")
    _common(pw)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: "
                        "%(message)s")
    return serve(args) if args.command == "serve" else worker(args)


if __name__ == "__main__":
    sys.exit(main())
