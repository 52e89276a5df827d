"""Who is asking: a random token per browser (cookie) or per API client (Bearer), and instructors.

Only a hash of each token is stored. A browser without a cookie gets a fresh token on its first
response (middleware below); its visitor row is created when it first needs one (a submission).
An API client may ask POST /api/visitors for a token, or send any long random Bearer token of its
own: an unknown one is registered on first use. A personal token (`kvp_...`, made on the
account page) acts as its account instead, as the signed-in page does; unknown, it is refused.
"""

from __future__ import annotations

import hmac
import re
import secrets
from typing import Literal, overload

from fastapi import Request
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from web.accounts.api_tokens import account_of
from web.accounts.sessions import account_visitor_token, request_session
from web.http.errors import ApiError
from web.http.throttle import client_address
from web.store.db import Database, Visitor, token_hash, utcnow

COOKIE = "kvp_visitor"
INSTRUCTOR_COOKIE = "kvp_instructor"
INSTRUCTOR_HEADER = "X-Instructor-Token"
TOKEN_RE = re.compile(r"^[A-Za-z0-9_\-.~+/=]{16,200}$")
# A personal token (web.accounts.api_tokens) acts as its account; a Bearer token of one's own
# must not start so.
PERSONAL_PREFIX = "kvp_"


def new_token() -> str:
    return secrets.token_urlsafe(24)


def request_token(request: Request) -> str | None:
    """The visitor token of this request: Bearer header first, then the cookie."""
    auth = request.headers.get("authorization", "")
    if auth:
        scheme, _, value = auth.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise ApiError(401, "bad_token", "the Authorization header must be "
                           "'Bearer <token>' (get a token from POST /api/visitors)")
        value = value.strip()
        if not TOKEN_RE.match(value):
            raise ApiError(401, "bad_token", "a bearer token is 16-200 characters of "
                           "letters, digits and -_.~+/=")
        if value.startswith(PERSONAL_PREFIX):
            return _personal(request, value)[1]
        return value
    account_token = signed_in_token(request)
    if account_token is not None:
        return account_token
    return browser_token(request)


def _personal(request: Request, value: str):
    """(account, its visitor token) of a personal token, looked up once per request; an
    unknown or revoked one is refused, never taken for a new visitor (its submissions would
    count for no one)."""
    cached = getattr(request.state, "kvp_personal", None)
    if cached is not None:
        return cached
    ctx = request.app.state.ctx
    account = account_of(ctx.db, value)
    if account is None:
        raise ApiError(401, "token_refused", "this personal token is unknown or was revoked: "
                       "make a new one on your account page (/account)")
    request.state.kvp_personal = (account, account_visitor_token(ctx.settings, account.id))
    return request.state.kvp_personal


def request_account(request: Request):
    """The account this request acts as: a personal token's, else (no Authorization header)
    the signed-in session's; None for a visitor."""
    auth = request.headers.get("authorization", "")
    if auth:
        _, _, value = auth.partition(" ")
        return _personal(request, value.strip())[0] if value.strip().startswith(
            PERSONAL_PREFIX) and TOKEN_RE.match(value.strip()) else None
    info = request_session(request)
    return info.account if info is not None else None


def browser_token(request: Request) -> str | None:
    """The browser's own anonymous visitor token (its cookie), signed in or not."""
    cookie = request.cookies.get(COOKIE)
    if cookie and TOKEN_RE.match(cookie):
        return cookie
    return getattr(request.state, "new_visitor_token", None)


def signed_in_token(request: Request) -> str | None:
    """The visitor token of the signed-in account (web.accounts.sessions), if any."""
    info = request_session(request)
    if info is None or info.account is None:
        return None
    return account_visitor_token(request.app.state.ctx.settings, info.account.id)


def find_visitor(db: Database, token: str | None) -> Visitor | None:
    if not token:
        return None
    with db.session() as s:
        return s.scalar(select(Visitor).where(Visitor.token_hash == token_hash(token)))


def get_or_create_visitor(db: Database, token: str) -> Visitor:
    h = token_hash(token)
    with db.session() as s:
        v = s.scalar(select(Visitor).where(Visitor.token_hash == h))
        if v is not None:
            v.last_seen_at = utcnow()
            s.commit()
            return v
        v = Visitor(token_hash=h)
        s.add(v)
        try:
            s.commit()
        except IntegrityError:  # two first requests at once
            s.rollback()
            v = s.scalar(select(Visitor).where(Visitor.token_hash == h))
        return v


@overload
def current_visitor(request: Request) -> Visitor: ...
@overload
def current_visitor(request: Request, create: Literal[True]) -> Visitor: ...
@overload
def current_visitor(request: Request, create: bool) -> Visitor | None: ...
def current_visitor(request: Request, create: bool = True) -> Visitor | None:
    db = request.app.state.ctx.db
    token = request_token(request)
    if token is None:
        if not create:
            return None
        raise ApiError(401, "no_identity", "send a visitor cookie or 'Authorization: Bearer "
                       "<token>' (POST /api/visitors gives one)")
    return get_or_create_visitor(db, token) if create else find_visitor(db, token)


def instructor_token_matches(request: Request, given: str) -> bool:
    """Whether `given` is the instructor token. Wrong guesses are throttled per client address
    (after a few, each must wait twice as long as the last: 429 with Retry-After), but the right
    token is never refused: an address is shared (a classroom behind one NAT) and, behind a
    proxy, only as true as the proxy's word, so a lockout keyed by it would let anyone there
    lock the instructor out. Guessing stays hopeless through the token's length, not the wait."""
    ctx = request.app.state.ctx
    token = ctx.settings.instructor_token
    if not token:
        return False
    ok = hmac.compare_digest(given.encode(), token.encode())
    guesses = ctx.limits.instructor_guesses if ctx.limits else None
    if ok or guesses is None:
        return ok
    key = client_address(request)
    wait = guesses.wait_s(key)
    if wait > 0:
        raise ApiError(429, "too_many_wrong_tokens", "too many wrong instructor tokens from "
                       f"this address; try again in {int(wait) + 1} s",
                       headers={"Retry-After": str(int(wait) + 1)})
    guesses.failed(key)
    return ok


def _given_instructor_token(request: Request) -> str | None:
    # Only the header: the page's cookie is an opaque session now (web.accounts.sessions),
    # never the token itself.
    return request.headers.get(INSTRUCTOR_HEADER)


def staff_session(request: Request) -> bool:
    """Signed in as platform staff: an account marked so, or the instructor token's session."""
    info = request_session(request)
    return bool(info and info.is_staff)


def instructor_ok(request: Request) -> bool:
    given = _given_instructor_token(request)
    if given:
        return instructor_token_matches(request, given)
    return staff_session(request)


def require_instructor(request: Request) -> None:
    if staff_session(request) and not _given_instructor_token(request):
        return
    token = request.app.state.ctx.settings.instructor_token
    if not token:
        raise ApiError(403, "instructor_disabled", "instructor access is off on this server: "
                       "start it with KVPRACTICE_INSTRUCTOR_TOKEN set")
    given = _given_instructor_token(request)
    if not given:
        raise ApiError(401, "instructor_token_missing",
                       f"send the instructor token in the {INSTRUCTOR_HEADER} header")
    if not instructor_token_matches(request, given):
        raise ApiError(403, "instructor_token_wrong", "the instructor token is wrong")


class VisitorCookieMiddleware:
    """Give a browser without a visitor cookie one, on the response to its first request."""

    def __init__(self, app, secure: bool = False):
        self.app, self.secure = app, secure

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].startswith("/static/"):
            return await self.app(scope, receive, send)
        headers = {k.decode().lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        has_cookie = f"{COOKIE}=" in headers.get("cookie", "")
        if has_cookie or "authorization" in headers:
            return await self.app(scope, receive, send)
        token = new_token()
        scope.setdefault("state", {})["new_visitor_token"] = token
        cookie = (f"{COOKIE}={token}; Path=/; Max-Age=31536000; HttpOnly; SameSite=Lax"
                  + ("; Secure" if self.secure else ""))

        async def send_with_cookie(message):
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [
                    (b"set-cookie", cookie.encode())]
            await send(message)

        return await self.app(scope, receive, send_with_cookie)
