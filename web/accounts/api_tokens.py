"""Personal tokens: what `judge.py submit` signs in with (issue 29).

An account makes one on its account page; the token is shown once and only its SHA-256 is kept.
It is sent as `Authorization: Bearer kvp_...`, and a request that carries it acts as the account
exactly as a signed-in page does (web.http.identity): the account's visitor, so its submissions
count for the account's courses and assignments under the account's limits. A token is 32
random bytes, so guessing one is hopeless without a throttle; an unknown or revoked token is
refused (401), never taken for a new anonymous visitor. An account holds at most MAX_PER_ACCOUNT.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select

from web.store.accounts import Account, ApiToken
from web.store.db import token_hash, utcnow

PREFIX = "kvp_"
MAX_PER_ACCOUNT = 10
MAX_NAME = 64
# `last used` is written at most this often per token: a submission's event stream reads the
# token for every reconnect, and a write per request would be a write per request.
TOUCH_EVERY = timedelta(minutes=1)


class TokenError(ValueError):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class TokenRow:
    id: int
    name: str
    created_at: datetime
    last_used_at: datetime | None


def is_personal(value: str) -> bool:
    return value.startswith(PREFIX)


def clean_name(name: str) -> str:
    name = " ".join((name or "").split())[:MAX_NAME]
    return name if name and all(ch.isprintable() for ch in name) else "judge.py"


def create(db, account_id: int, name: str) -> str:
    """A new token for the account; the only time its value exists outside the client."""
    value = PREFIX + secrets.token_urlsafe(32)
    with db.session() as s:
        held = s.scalar(select(func.count()).select_from(ApiToken)
                        .where(ApiToken.account_id == account_id)) or 0
        if held >= MAX_PER_ACCOUNT:
            raise TokenError(409, "too_many_tokens", "An account holds at most {n} tokens: "
                             "revoke one first.")
        s.add(ApiToken(account_id=account_id, token_hash=token_hash(value),
                       name=clean_name(name)))
        s.commit()
    return value


def listing(db, account_id: int) -> list[TokenRow]:
    with db.session() as s:
        rows = s.scalars(select(ApiToken).where(ApiToken.account_id == account_id)
                         .order_by(ApiToken.id))
        return [TokenRow(r.id, r.name, r.created_at, r.last_used_at) for r in rows]


def revoke(db, account_id: int, token_id: int) -> bool:
    """Deletes one of the account's own tokens (another account's id is not found)."""
    with db.session() as s:
        done = s.execute(delete(ApiToken).where(ApiToken.id == token_id,
                                                ApiToken.account_id == account_id)).rowcount
        s.commit()
    return bool(done)


def account_of(db, value: str) -> Account | None:
    """The account a personal token acts for, or None (unknown or revoked)."""
    now = utcnow()
    with db.session() as s:
        row = s.scalar(select(ApiToken).where(ApiToken.token_hash == token_hash(value)))
        if row is None:
            return None
        account = s.get(Account, row.account_id)
        if row.last_used_at is None or now - row.last_used_at > TOUCH_EVERY:
            row.last_used_at = now
            s.commit()
        return account
