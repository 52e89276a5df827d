"""The one kind of schema change this project makes: new columns on existing tables.

`create_all` creates missing tables but leaves existing ones alone, so a database made by an
earlier version lacks the columns added since. Each such column is nullable or has a server
default, so `ALTER TABLE ... ADD COLUMN` brings the table up to date without touching its rows.
"""

from __future__ import annotations

import logging

from sqlalchemy import MetaData, inspect, text
from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)


def add_missing_columns(engine: Engine, metadata: MetaData) -> list[str]:
    """Add the model columns a table lacks; the "table.column" names added."""
    insp = inspect(engine)
    added = []
    prep = engine.dialect.identifier_preparer
    for table in metadata.sorted_tables:
        if not insp.has_table(table.name):
            continue
        have = {c["name"] for c in insp.get_columns(table.name)}
        for col in table.columns:
            if col.name in have:
                continue
            ddl = (f"ALTER TABLE {prep.quote(table.name)} ADD COLUMN {prep.quote(col.name)} "
                   f"{col.type.compile(dialect=engine.dialect)}")
            if col.server_default is not None:
                ddl += f" DEFAULT {col.server_default.arg.text}"
            elif not col.nullable and not col.primary_key:
                ddl += " NULL"  # older rows have no value; the model fills new ones
            with engine.begin() as conn:
                try:
                    conn.execute(text(ddl))
                except Exception:
                    # Another process added it in the meantime (two servers starting at once).
                    if col.name not in {c["name"] for c in inspect(conn).get_columns(table.name)}:
                        raise
            log.info("database: added column %s.%s", table.name, col.name)
            added.append(f"{table.name}.{col.name}")
    return added
