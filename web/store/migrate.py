"""Schema changes: Alembic migrations (web/store/alembic/versions), run at start-up by `upgrade`.

A database made before Alembic has the tables but no `alembic_version`: it is brought up to the
baseline (0001) by the old rule, new columns on existing tables, and stamped, then upgraded like
any other. That rule (`add_missing_columns`) still runs after the migrations for columns a model
gained without one: each is nullable or has a server default, so `ALTER TABLE ... ADD COLUMN`
brings the table up to date without touching its rows.
"""

from __future__ import annotations

import logging
from pathlib import Path

from sqlalchemy import MetaData, inspect, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.schema import DefaultClause, FetchedValue

log = logging.getLogger(__name__)

ALEMBIC_DIR = Path(__file__).resolve().parent / "alembic"
# The tables of the schema before Alembic (revision 0001).
LEGACY_TABLES = ("visitors", "submissions", "submission_events", "workers", "regrades",
                 "regrade_items")


def _config(connection):
    from alembic.config import Config
    cfg = Config()
    cfg.set_main_option("script_location", str(ALEMBIC_DIR))
    cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory
    head = ScriptDirectory(str(ALEMBIC_DIR)).get_current_head()
    if head is None:
        raise RuntimeError(f"no migration in {ALEMBIC_DIR}")
    return head


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine, metadata: MetaData) -> None:
    """Bring the database to the newest revision (a pre-Alembic one is stamped 0001 first, its
    missing columns added from `metadata`: web.store.db's Base's)."""
    from alembic import command
    if current_revision(engine) == head_revision():
        return
    try:
        with engine.begin() as conn:
            cfg = _config(conn)
            if inspect(conn).has_table("submissions") and \
                    not inspect(conn).has_table("alembic_version"):
                add_missing_columns(conn, metadata, only=LEGACY_TABLES)
                command.stamp(cfg, "0001")
            command.upgrade(cfg, "head")
    except Exception:
        # Two processes starting on one new database: the other one migrated it meanwhile.
        if current_revision(engine) != head_revision():
            raise


def add_missing_columns(engine: Engine | Connection, metadata: MetaData,
                        only: tuple[str, ...] | None = None) -> list[str]:
    """Add the model columns a table lacks; the "table.column" names added. `engine` may be a
    connection (inside a migration)."""
    insp = inspect(engine)
    added = []
    prep = engine.dialect.identifier_preparer
    for table in metadata.sorted_tables:
        if not insp.has_table(table.name) or (only is not None and table.name not in only):
            continue
        have = {c["name"] for c in insp.get_columns(table.name)}
        for col in table.columns:
            if col.name in have:
                continue
            ddl = (f"ALTER TABLE {prep.quote(table.name)} ADD COLUMN {prep.quote(col.name)} "
                   f"{col.type.compile(dialect=engine.dialect)}")
            if col.server_default is not None:
                ddl += f" DEFAULT {_default_sql(col.server_default, engine.dialect)}"
            elif not col.nullable and not col.primary_key:
                ddl += " NULL"  # older rows have no value; the model fills new ones
            if not isinstance(engine, Engine):  # a migration's connection: its transaction
                engine.execute(text(ddl))
                added.append(f"{table.name}.{col.name}")
                continue
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


def _default_sql(default: FetchedValue, dialect) -> str:
    """A column's server default as DDL (text("..."), false(), or a plain string)."""
    if not isinstance(default, DefaultClause):
        raise TypeError(f"a server default this module cannot write: {default!r}")
    if isinstance(default.arg, str):
        return "'" + default.arg.replace("'", "''") + "'"
    return str(default.arg.compile(dialect=dialect))
