"""Security headers on every response, refusals of the edge included.

No page of this server may be framed: a page on another origin (another port of the same host
is one) that frames `/instructor` could make one click submit a pending regrade's discard, since
the form's own Origin is the judge's. `frame-ancestors 'none'` says so to browsers that read CSP,
`X-Frame-Options: DENY` to those that do not.

The pages' policy lets only this server's own scripts run (the bundles under /static; the JSON
data blocks of the templates are not executed), compile WebAssembly (`'wasm-unsafe-eval'`,
which allows no JavaScript eval) and the editor style itself (CodeMirror
writes its styles at run time, and templates carry a few `style=` attributes): styles cannot run
code. API answers are data, so theirs allows nothing to load at all.
"""

from __future__ import annotations

PAGE_POLICY = "; ".join((
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'",
    "worker-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))
API_POLICY = "default-src 'none'; frame-ancestors 'none'"
# The Pyodide worker's own policy (a worker takes the policy its script is served with): Pyodide
# evaluates the JavaScript that its shared libraries carry (Emscripten's EM_ASM/EM_JS, when the
# runner's packages load), so Run fails (IE) without eval there. The worker runs the student's
# Python anyway, has no DOM and no cookies, and talks only to this server: eval in it grants
# nothing it does not already have. The pages themselves never get eval.
WORKER_POLICY = PAGE_POLICY.replace("'wasm-unsafe-eval'", "'wasm-unsafe-eval' 'unsafe-eval'")
WORKER_SCRIPT = "/static/dist/worker.js"

_COMMON = [(b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"same-origin")]
_OURS = {k for k, _ in _COMMON} | {b"content-security-policy"}


def policy_for(path: str) -> str:
    if path.startswith("/api/"):
        return API_POLICY
    return WORKER_POLICY if path == WORKER_SCRIPT else PAGE_POLICY


class SecurityHeaders:
    """ASGI middleware: the headers above on every HTTP response."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        extra = _COMMON + [(b"content-security-policy", policy_for(scope["path"]).encode())]

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                message["headers"] = [(k, v) for k, v in message.get("headers", [])
                                      if k.lower() not in _OURS] + extra
            await send(message)

        return await self.app(scope, receive, send_with_headers)
