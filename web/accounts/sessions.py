"""Server-side sessions behind a signed, HttpOnly, SameSite cookie.

The cookie carries a random session id signed with the server's key (itsdangerous), nothing
else: who the session belongs to, whether it may act as staff and when it expires are in the
`auth_sessions` row, stored under the id's hash. Signing out deletes the row, so a copied cookie
is worth nothing after it. Served over HTTPS the cookie is `__Host-` prefixed (Secure, Path=/,
no Domain), so no other host or port below the same name can set or read it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from itsdangerous import BadSignature, Signer
from sqlalchemy import delete, select

from web.store.accounts import Account, AuthSession
from web.store.db import utcnow

PLAIN_COOKIE = "kvp_session"
HTTPS_COOKIE = "__Host-kvp_session"
_NO_SESSION = object()


def cookie_name(settings) -> str:
    return HTTPS_COOKIE if settings.cookie_secure else PLAIN_COOKIE


def secret_key(settings) -> str:
    """The configured key, else one made once and kept (mode 0600) in the data directory."""
    if settings.secret_key:
        return settings.secret_key
    cached = getattr(settings, "_secret_cache", None)
    if cached:
        return cached
    path = Path(settings.data_dir) / "secret_key"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made by an earlier start, or by another process just now
        pass
    else:
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(48))
    key = path.read_text().strip()
    settings._secret_cache = key
    return key


def _signer(settings) -> Signer:
    return Signer(secret_key(settings), salt="kvp-session")


def _hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def account_visitor_token(settings, account_id: int) -> str:
    """The visitor token an account acts with: derived from the server key, never stored or
    sent, so only a valid session (or a script holding the key) can act as the account."""
    return hmac.new(secret_key(settings).encode(), f"account-visitor:{account_id}".encode(),
                    hashlib.sha256).hexdigest()


@dataclass
class SessionInfo:
    id_hash: str
    account: Account | None
    is_staff: bool


def open_session(db, settings, account_id: int | None, is_staff: bool = False) -> str:
    """A new session; the cookie value to send (signed id)."""
    sid = secrets.token_urlsafe(32)
    now = utcnow()
    with db.session() as s:
        s.add(AuthSession(id_hash=_hash(sid), account_id=account_id, is_staff=is_staff,
                          created_at=now,
                          expires_at=now + timedelta(seconds=settings.session_ttl_s)))
        # expired sessions are swept as new ones are made: the table never grows unbounded
        s.execute(delete(AuthSession).where(AuthSession.expires_at < now))
        s.commit()
    return _signer(settings).sign(sid).decode()


def _session_id(settings, cookie: str | None) -> str | None:
    if not cookie or len(cookie) > 200:
        return None
    try:
        return _signer(settings).unsign(cookie).decode()
    except BadSignature:
        return None


def lookup(db, settings, cookie: str | None) -> SessionInfo | None:
    sid = _session_id(settings, cookie)
    if sid is None:
        return None
    with db.session() as s:
        row = s.get(AuthSession, _hash(sid))
        if row is None or row.expires_at < utcnow():
            return None
        account = s.get(Account, row.account_id) if row.account_id is not None else None
        staff = row.is_staff or bool(account and account.is_staff)
        return SessionInfo(row.id_hash, account, staff)


def request_session(request) -> SessionInfo | None:
    """This request's session (looked up once per request)."""
    cached = getattr(request.state, "kvp_session", _NO_SESSION)
    if cached is None or isinstance(cached, SessionInfo):  # looked up already
        return cached
    ctx = request.app.state.ctx
    info = lookup(ctx.db, ctx.settings, request.cookies.get(cookie_name(ctx.settings)))
    request.state.kvp_session = info
    return info


def request_account(request) -> Account | None:
    info = request_session(request)
    return info.account if info else None


def close(db, settings, cookie: str | None) -> None:
    sid = _session_id(settings, cookie)
    if sid is None:
        return
    with db.session() as s:
        s.execute(delete(AuthSession).where(AuthSession.id_hash == _hash(sid)))
        s.commit()


def close_all(db, account_id: int) -> None:
    """Every session of an account (its password was reset)."""
    with db.session() as s:
        s.execute(delete(AuthSession).where(AuthSession.account_id == account_id))
        s.commit()


def set_cookie(response, settings, value: str) -> None:
    response.set_cookie(cookie_name(settings), value, max_age=int(settings.session_ttl_s),
                        path="/", httponly=True, samesite="lax", secure=settings.cookie_secure)


def clear_cookie(response, settings) -> None:
    response.delete_cookie(cookie_name(settings), path="/", httponly=True, samesite="lax",
                           secure=settings.cookie_secure)


def session_count(db, account_id: int) -> int:
    with db.session() as s:
        return len(list(s.scalars(select(AuthSession.id_hash)
                                  .where(AuthSession.account_id == account_id))))
