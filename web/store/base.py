"""What every table of web.store is made on: the declarative `Base` (one metadata: web.store.db's
tables and web.store.accounts') and `utcnow`, the time as rows keep it."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy.orm import DeclarativeBase


def utcnow() -> datetime:
    """Naive UTC (SQLite keeps no time zone)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


class Base(DeclarativeBase):
    pass
