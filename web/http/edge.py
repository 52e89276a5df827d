"""The server's edge: what is refused before a route reads a byte of the body.

Every request is hostile input until shown otherwise, and refusing one must cost less than
sending it. So, before the application sees a request:

- a body larger than its route allows is answered 413 at once when `Content-Length` says so, and
  as soon as the stream passes the limit otherwise (chunked uploads): the body is read here, up
  to the limit, and the route gets it whole;
- the worker API answers 401/403 before reading the body unless the worker token is right;
- a state-changing request authenticated by a cookie alone is refused when its `Origin` is another
  origin; one carrying a session cookie, or to a sign-in or course form, must also *show* it
  comes from a page of this server (`Origin`, else `Referer`): that is the forms' CSRF guard.
  A page on another port of the same host is same-site, so `SameSite=Lax` cookies alone do not
  stop it.
"""

from __future__ import annotations

import hmac
import json
import re
from urllib.parse import urlsplit

from web.http.errors import error_body
from web.services.submissions import body_limit as submission_body_limit

# The largest row id any route accepts: PostgreSQL's INTEGER, so no id reaches the database as an
# overflow (a 5xx) rather than a "not found".
MAX_ROW_ID = 2**31 - 1

WORKER_PREFIX = "/api/workers/"
WORKER_HEADER = b"x-worker-token"
INSTRUCTOR_HEADER = b"x-instructor-token"
# The session cookie's names (web.accounts.sessions: plain, and `__Host-` over HTTPS).
SESSION_COOKIES = ("kvp_session=", "__Host-kvp_session=")
_STATE_CHANGING = {"POST", "PUT", "PATCH", "DELETE"}
# Forms that sign in, out or up, or change a course: always from this server's own pages.
_ACCOUNT_PATHS = re.compile(r"^/(api/)?(login|signup|logout|courses|auth)(/|$)")
# An LTI login initiation and launch come from the LMS's pages by design (a form it posts):
# the launch is authenticated by the platform's signed id token and a one-use state bound to
# this browser (web/lti/launch.py), never by a cookie alone.
LTI_FROM_THE_LMS = ("/lti/login", "/lti/launch")
_RESULT_PATH = re.compile(r"^/api/workers/jobs/\d+/(result|events)$")


def body_limit(method: str, path: str, max_code_bytes: int) -> int:
    """Bytes of body a route may receive. A submission's code may be JSON-escaped up to six
    bytes per byte (\\uXXXX); a worker's report and events are bounded by the grading core's
    report cap; everything else is a small form or JSON object."""
    if method not in _STATE_CHANGING:
        return 0
    if path == "/api/submissions":
        return submission_body_limit(max_code_bytes)
    if _RESULT_PATH.match(path):
        return 4 * 1024 * 1024
    return 64 * 1024


def _origin_of(url: str) -> str | None:
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}".lower()


class EdgeGuard:
    """ASGI middleware applying the rules of this module; `settings` is read per request, so
    tests may change it on a live app."""

    def __init__(self, app, settings):
        self.app, self.settings = app, settings

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        method, path = scope["method"], scope["path"]
        headers = scope.get("headers", [])
        refusal = self._refuse(method, path, headers, scope)
        if refusal is not None:
            status, code, message = refusal
            return await _send_error(send, status, code, message)

        limit = body_limit(method, path, self.settings.max_code_bytes)
        if method not in _STATE_CHANGING:
            return await self.app(scope, receive, send)
        length = _header(headers, b"content-length")
        if length is not None:
            if not length.isdigit():
                return await _send_error(send, 400, "bad_content_length",
                                         "Content-Length must be a number of bytes")
            if int(length) > limit:
                return await _send_error(send, 413, "body_too_large",
                                         f"the request body is {length} bytes; the limit here "
                                         f"is {limit} bytes")
        # Read the body here, up to the limit, and hand it on in one piece: a route never
        # starts on a body that turns out too large, and chunked uploads are bounded too.
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > limit:
                return await _send_error(send, 413, "body_too_large",
                                         f"the request body is over {limit} bytes")
            if not message.get("more_body", False):
                break
        delivered = False

        async def replay():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _refuse(self, method, path, headers, scope) -> tuple[int, str, str] | None:
        settings = self.settings
        if path.startswith(WORKER_PREFIX):
            refusal = worker_token_refusal(settings.worker_token, _header(headers, WORKER_HEADER))
            if refusal is not None:
                return refusal
        if method in _STATE_CHANGING and path not in LTI_FROM_THE_LMS \
                and _header(headers, b"authorization") is None \
                and _header(headers, INSTRUCTOR_HEADER) is None \
                and (cookie := _header(headers, b"cookie")) is not None:
            # Authenticated by a cookie alone: the browser may have been made to send it.
            own = _own_origin(scope, headers)
            claimed = _header(headers, b"origin")
            claimed = _origin_of(claimed) if claimed and claimed != "null" else claimed
            signed_in = any(name in cookie for name in SESSION_COOKIES)
            instructor = signed_in or _ACCOUNT_PATHS.match(path) is not None
            if claimed is None and instructor:
                referer = _header(headers, b"referer")
                claimed = _origin_of(referer) if referer else None
            if (claimed is not None or instructor) and claimed != own:
                return (403, "cross_origin", "a request authenticated by a cookie must come from "
                        f"this server's own pages (Origin {claimed or 'missing'}, expected {own})")
        return None


def worker_token_refusal(token: str | None, given: str | None) -> tuple[int, str, str] | None:
    """Why a worker API call is refused (status, code, message), or None when its token is right."""
    if not token:
        return (403, "workers_disabled", "this server takes no remote workers: start it with "
                "--worker-token (or $KVPRACTICE_WORKER_TOKEN)")
    if not given:
        return 401, "worker_token_missing", "send the worker token in X-Worker-Token"
    if not hmac.compare_digest(given.encode(), token.encode()):
        return 403, "worker_token_wrong", "the worker token is wrong"
    return None


def _own_origin(scope, headers) -> str:
    host = _header(headers, b"host") or "%s:%s" % tuple(scope.get("server") or ("localhost", 80))
    return f"{scope.get('scheme', 'http')}://{host}".lower()


def _header(headers, name: bytes) -> str | None:
    for k, v in headers:
        if k.lower() == name:
            return v.decode("latin-1")
    return None


async def _send_error(send, status: int, code: str, message: str) -> None:
    body = json.dumps(error_body(code, message)).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
