"""The FastAPI application factory.

    from web.app import create_app
    app = create_app(Settings(data_dir=...), grader=my_fake_grader, workers=0)

`grader` defaults to the grading core (`judge.grade`); `workers` (default 0) grading threads start
with the app's lifespan, together with the lease reaper and the recovery of unfinished work.
With `settings.queue_url` (redis://...) jobs go to Redis for workers on other hosts, which report
through the worker API (`web.api.workers`, enabled by `settings.worker_token`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import threading
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware

from judge.problem import ProblemBank
from web.api import instructor, practice, problems, regrade, submissions, visitors
from web.api import workers as worker_api
from web.http.edge import EdgeGuard
from web.http.errors import install_error_handlers
from web.http.headers import SecurityHeaders
from web.http.identity import VisitorCookieMiddleware
from web.http.throttle import ClientLimits
from web.jobs.checks import ProblemChecks
from web.jobs.graders import Grader, judge_grader
from web.jobs.system import JobSystem
from web.pages.account import router as account_page
from web.pages.account_settings import router as account_settings
from web.pages.courses import router as course_pages
from web.pages.packages import router as package_downloads
from web.pages.render import render_error_page
from web.pages.routes import router as pages_router
from web.pages.sandbox import router as sandbox_router
from web.pages.sign_in import router as account_pages
from web.settings import BUILD_COMMAND, STATIC_DIR, Settings
from web.store.db import Database

log = logging.getLogger(__name__)

DIST_FILES = ("problem.js", "submission.js", "worker.js", "sandbox_frame.js", "app.css",
              "math.js")
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
                 "pyodide-lock.json")
# Already compressed, or streamed: never through GZip (the wasm alone costs ~0.8 s CPU a time).
NO_GZIP_SUFFIXES = (".wasm", ".zip", ".whl", ".png", ".jpg", ".gz", ".memory", ".files", "/events")
# Files the build also writes gzipped (name + ".gz"): sent as they are to browsers accepting gzip.
PRECOMPRESSED = {".wasm": b"application/wasm", ".mjs": b"text/javascript; charset=utf-8",
                 # the page bundles (web/frontend/build.mjs writes their .gz)
                 ".js": b"text/javascript; charset=utf-8", ".css": b"text/css; charset=utf-8",
                 # the build's snapshot of the page's Python (web/frontend/src/make_snapshot.js)
                 ".memory": b"application/octet-stream", ".files": b"application/octet-stream"}


@dataclass
class AppContext:
    settings: Settings
    db: Database
    catalog: ProblemBank
    jobs: JobSystem
    checks: ProblemChecks
    build: dict = field(default_factory=dict)
    limits: ClientLimits | None = None


def front_end_build(static_dir=STATIC_DIR) -> dict:
    """What the front-end build produced: URLs for the pages, and what is missing."""
    dist, vendor = static_dir / "dist", static_dir / "vendor"
    missing = [f"web/static/dist/{f}" for f in DIST_FILES if not (dist / f).is_file()]
    missing += [f"web/static/vendor/pyodide/{f}" for f in PYODIDE_FILES
                if not (vendor / "pyodide" / f).is_file()]
    manifest = {}
    if (vendor / "manifest.json").is_file():
        manifest = json.loads((vendor / "manifest.json").read_text())
    else:
        missing.append("web/static/vendor/manifest.json")
    wheels = [f"/static/vendor/wheels/{w}" for w in manifest.get("wheels", [])
              if (vendor / "wheels" / w).is_file()]
    editor_wheels = [f"/static/vendor/wheels/{w}" for w in manifest.get("editor_wheels", [])
                     if (vendor / "wheels" / w).is_file()]
    if len(wheels) != len(manifest.get("wheels", [])):
        missing.append("web/static/vendor/wheels/*.whl")
    # Without it the page still works, but every first visit starts Python cold (issue 19).
    if not any((vendor / "snapshot").glob("*.memory")):
        missing.append("web/static/vendor/snapshot/*.memory")

    def v(path):
        p = static_dir / path
        if not p.is_file():
            return f"/static/{path}"
        return f"/static/{path}?v={hashlib.sha256(p.read_bytes()).hexdigest()[:10]}"

    return {"ok": not missing, "missing": missing, "command": BUILD_COMMAND,
            "worker_url": v("dist/worker.js"), "problem_js": v("dist/problem.js"),
            "submission_js": v("dist/submission.js"), "css": v("dist/app.css"),
            "pages_js": v("dist/pages.js"), "math_js": v("dist/math.js"),
            "pyodide_url": "/static/vendor/pyodide/", "wheels": wheels,
            "editor_wheels": editor_wheels,
            "pyodide_version": manifest.get("pyodide_version"),
            **_sandbox_frame(dist), "snapshot": _published_snapshot(vendor)}


_NO_SANDBOX = {"sandbox_script": None, "sandbox_worker": None, "sandbox_hash": None,
               "sandbox_url": None}


def _sandbox_frame(dist) -> dict:
    """The sandbox frame's script, which web/pages/sandbox.py writes inline beside the worker's
    script (as text), the script's CSP hash, and the frame's URL, which changes with either."""
    frame, worker = dist / "sandbox_frame.js", dist / "worker.js"
    if not (frame.is_file() and worker.is_file()):
        return _NO_SANDBOX
    script = frame.read_text(encoding="utf-8")
    if "</script" in script.lower():  # it would end the inline element early: no sandbox
        log.error("%s holds '</script': it cannot be written inline", frame)
        return _NO_SANDBOX
    worker_text = worker.read_text(encoding="utf-8")
    digest = hashlib.sha256(script.encode()).digest()
    version = hashlib.sha256(digest + worker_text.encode()).hexdigest()[:10]
    return {"sandbox_script": script, "sandbox_worker": worker_text,
            "sandbox_hash": "sha256-" + base64.b64encode(digest).decode(),
            "sandbox_url": f"/sandbox/python?v={version}"}


_DIGESTS: dict = {}


def _sha256_of(path) -> str:
    """A file's SHA-256, remembered while its size and time stay (the snapshot is 31 MB, and
    every app a test makes asks)."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def _published_snapshot(vendor) -> dict | None:
    """The build's snapshot of the page's Python as the pages publish it: the page restores a
    copy it kept only when its digest is this one (web/frontend/src/snapshot_cache.js)."""
    memories = sorted((vendor / "snapshot").glob("*.memory"))
    if len(memories) != 1 or not memories[0].with_suffix(".files").is_file():
        return None
    memory = memories[0]
    files = memory.with_suffix(".files")
    base = "/static/vendor/snapshot/"
    return {"name": memory.stem, "memory": base + memory.name, "files": base + files.name,
            "memory_sha256": _sha256_of(memory), "files_sha256": _sha256_of(files)}


class _StaticHeadersAndGzip:
    """GZip for text responses except already-compressed files and event streams; cache headers
    for static files (vendor files change only with a rebuild, dist URLs carry a content hash)."""

    def __init__(self, app):
        self.app = app
        self.gzip = GZipMiddleware(app, minimum_size=1024)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        target = self.app if path.endswith(NO_GZIP_SUFFIXES) else self.gzip
        if not path.startswith("/static/"):
            return await target(scope, receive, send)
        cache = (b"public, max-age=86400" if path.startswith("/static/vendor/")
                 else b"public, max-age=300")
        extra = [(b"cache-control", cache)]
        suffix = path[path.rfind("."):]
        if suffix in PRECOMPRESSED and ".." not in path:
            accept = dict(scope.get("headers", [])).get(b"accept-encoding", b"")
            if b"gzip" in accept and (STATIC_DIR / (path[len("/static/"):] + ".gz")).is_file():
                scope = dict(scope, path=path + ".gz", raw_path=(path + ".gz").encode())
                target = self.app
                extra += [(b"content-encoding", b"gzip"), (b"vary", b"Accept-Encoding"),
                          (b"content-type", PRECOMPRESSED[suffix])]
        drop = {k for k, _ in extra}

        async def send_cached(message):
            if message["type"] == "http.response.start":
                message["headers"] = [(k, v) for k, v in message.get("headers", [])
                                      if k.lower() not in drop] + extra
            await send(message)

        return await target(scope, receive, send_cached)


def create_app(settings: Settings | None = None, grader: Grader | None = None,
               workers: int = 0) -> FastAPI:
    settings = settings or Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    db = Database(settings.db_url)
    db.create_all()
    catalog = ProblemBank(settings.problems_dir, settings.reference_dir)
    jobs = JobSystem(settings, db, catalog, grader or judge_grader)
    ctx = AppContext(settings=settings, db=db, catalog=catalog,
                     jobs=jobs,
                     checks=ProblemChecks(settings), build=front_end_build(),
                     limits=ClientLimits(settings))

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        jobs.start_workers(workers)  # with 0 workers: recovery and the lease reaper only
        threading.Thread(target=_warm_expectations, args=(ctx,), daemon=True,
                         name="warm-expectations").start()
        lti_stop = _start_lti(ctx)
        try:
            yield
        finally:
            lti_stop.set()
            jobs.stop()

    app = FastAPI(
        title="KV-cache practice platform",
        version="0.1.0",
        description=(
            "Problems of the inference-systems handbook, graded by the same core as "
            "`practice/judge.py`. Identify with the visitor cookie or `Authorization: Bearer "
            "<token>` (POST /api/visitors). Errors are JSON: "
            "`{\"error\": {\"code\", \"message\"}}`. Instructor endpoints need the "
            "`X-Instructor-Token` header."),
        lifespan=lifespan,
    )
    app.state.ctx = ctx
    install_error_handlers(app, render_error_page)
    _include_routers(app, settings)
    if settings.oidc_enabled:
        from web.pages.oidc import install as install_oidc
        install_oidc(app, settings)
    app.mount("/static", StaticFiles(directory=str(STATIC_DIR), check_dir=False), name="static")
    app.add_middleware(VisitorCookieMiddleware, secure=settings.cookie_secure)
    app.add_middleware(_StaticHeadersAndGzip)
    # Outermost: a refused request costs nothing further down.
    app.add_middleware(EdgeGuard, settings=settings)
    if settings.forwarded_allow_ips:
        # Only configured proxies may say who the client is; every limit keyed by address
        # then sees the proxy's word for it (outside the edge, so the edge sees it too).
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware
        app.add_middleware(ProxyHeadersMiddleware,
                           trusted_hosts=[h.strip() for h in
                                          settings.forwarded_allow_ips.split(",") if h.strip()])
    # Around even the edge: its refusals carry the anti-framing headers too.
    app.add_middleware(SecurityHeaders, sandbox_script=ctx.build.get("sandbox_hash"))
    return app


def _include_routers(app: FastAPI, settings: Settings) -> None:
    for api in (problems, submissions, practice, visitors, instructor, regrade, worker_api):
        app.include_router(api.router)
    for router in (pages_router, sandbox_router, account_pages, account_page, account_settings,
                   package_downloads, course_pages):
        app.include_router(router)
    if settings.lti_platforms:  # LTI 1.3 (web/lti): only for the platforms configured
        from web.lti.launch import router as lti_launch
        from web.lti.mapping import router as lti_deep_link
        app.include_router(lti_launch)
        app.include_router(lti_deep_link)


def _start_lti(ctx: AppContext) -> threading.Event:
    """Scores back to the LMS (web/lti/scores.py), when one is registered; the event stops it."""
    stop = threading.Event()
    if ctx.settings.lti_platforms:
        from web.lti.scores import start_syncing
        start_syncing(ctx, stop)
    return stop


def _warm_expectations(ctx: AppContext) -> None:
    """Compute the reference's public observations ahead of the first page view."""
    from judge.grading.reference_cache import public_expectations_or_error

    for p in ctx.catalog.list():
        if p.browser:
            public_expectations_or_error(p)
