"""The page's Python sandbox: the document of the problem page's hidden frame, in whose worker
the editor's code runs (web/frontend/src/sandbox_frame.js, pyworker.js).

It is the frame's script, inline, and the worker's script as text beside it (the frame starts
the worker from a blob of it as soon as it loads), so that its policy (web/http/headers.py,
sandbox_policy) can allow that one script by its hash and no script from anywhere: the document
and its worker make no request at all.
"""

from __future__ import annotations

import gzip
import html
from functools import lru_cache

from fastapi import APIRouter, Request
from fastapi.responses import Response

from web.http.headers import SANDBOX_PATH

router = APIRouter()


def sandbox_document(script: str, worker: str) -> str:
    # The worker's script is text here, never run as a script of the document: escaped, it is
    # exactly what textContent reads back.
    return ("<!doctype html><meta charset=utf-8><title>Python</title>"
            f'<div hidden id="worker-script">{html.escape(worker, quote=False)}</div>'
            f"<script>{script}</script>")


@lru_cache(maxsize=4)
def _document(url: str, script: str, worker: str) -> tuple[bytes, bytes]:
    """The document and its gzipped copy, made once per build (it holds the 360 kB worker)."""
    body = sandbox_document(script, worker).encode()
    return body, gzip.compress(body, compresslevel=9, mtime=0)


@router.get(SANDBOX_PATH, include_in_schema=False)
def python_sandbox(request: Request) -> Response:
    build = request.app.state.ctx.build
    if not build.get("sandbox_script"):
        return Response("the front end is not built", status_code=404, media_type="text/plain")
    body, packed = _document(build["sandbox_url"], build["sandbox_script"], build["sandbox_worker"])
    # Its URL changes with either script (?v=), so a copy may be kept: a restart reloads it.
    headers = {"cache-control": "public, max-age=300", "vary": "Accept-Encoding"}
    if "gzip" in request.headers.get("accept-encoding", ""):
        body, headers["content-encoding"] = packed, "gzip"
    return Response(body, media_type="text/html; charset=utf-8", headers=headers)
