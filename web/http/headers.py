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

The one document that is framed is the page's Python sandbox (SANDBOX_PATH, web/pages/sandbox.py):
the problem page's hidden frame, in whose worker the editor's code runs, code that may be someone
else's (staff load a student's submission). Its policy makes it sandboxed whatever frames it
(`sandbox allow-scripts`: an opaque origin, so no cookies, storage or same-origin standing) and
gives it no network (`connect-src 'none'`, scripts only its own inline one, by hash, and blobs),
and only this server's pages may frame it.
"""

from __future__ import annotations

import re

PAGE_POLICY = "; ".join((
    "default-src 'self'",
    "script-src 'self' 'wasm-unsafe-eval'",
    "worker-src 'none'",  # the page's Python runs in the sandbox frame's worker
    "frame-src 'self'",
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
SANDBOX_PATH = "/sandbox/python"


def sandbox_policy(script_hash: str | None) -> str:
    """The sandbox frame's policy: its inline script (allowed by `script_hash`, 'sha256-...'),
    the worker it makes from a blob, and Pyodide's eval and wasm there; no request of any kind.
    Pyodide evaluates the JavaScript its shared libraries carry (Emscripten's EM_ASM/EM_JS), so
    the worker needs eval; it grants nothing in an origin that holds nothing."""
    scripts = " ".join(filter(None, (f"'{script_hash}'" if script_hash else None, "blob:",
                                     "'unsafe-eval'", "'wasm-unsafe-eval'")))
    return "; ".join((
        "default-src 'none'",
        f"script-src {scripts}",
        "worker-src blob:",
        "connect-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "sandbox allow-scripts",
        "frame-ancestors 'self'",
    ))


_COMMON = [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin")]
# A route's own word to this middleware (never sent on): one more origin its page's forms may
# post to. Only an LTI deep linking answer says it, for the LMS that asked (web/lti/mapping.py).
FORM_TARGET = b"x-kvp-form-action"
_OURS = {k for k, _ in _COMMON} | {b"content-security-policy", b"x-frame-options", FORM_TARGET}
_ORIGIN = re.compile(rb"^https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?$")


def policy_for(path: str, sandbox_script: str | None = None) -> str:
    if path.startswith("/api/"):
        return API_POLICY
    return sandbox_policy(sandbox_script) if path == SANDBOX_PATH else PAGE_POLICY


class SecurityHeaders:
    """ASGI middleware: the headers above on every HTTP response; `sandbox_script` is the hash
    of the sandbox frame's inline script (front_end_build()'s)."""

    def __init__(self, app, sandbox_script: str | None = None):
        self.app, self.sandbox_script = app, sandbox_script

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        frame = b"SAMEORIGIN" if path == SANDBOX_PATH else b"DENY"
        extra = _COMMON + [(b"x-frame-options", frame), (b"content-security-policy",
                                                        policy_for(path, self.sandbox_script).encode())]

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                given = message.get("headers", [])
                target = next((v for k, v in given if k.lower() == FORM_TARGET), None)
                headers = extra
                if target and _ORIGIN.match(target):
                    policy = dict(extra)[b"content-security-policy"].replace(
                        b"form-action 'self'", b"form-action 'self' " + target)
                    headers = [(k, policy if k == b"content-security-policy" else v)
                               for k, v in extra]
                message["headers"] = [(k, v) for k, v in given if k.lower() not in _OURS] + headers
            await send(message)

        return await self.app(scope, receive, send_with_headers)
