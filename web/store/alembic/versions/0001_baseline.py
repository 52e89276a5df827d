"""The schema as it was before Alembic: visitors, submissions and their events, workers,
regrades. Made from the models of those tables, which kept themselves up to date with
web.store.migrate.add_missing_columns; every change since is a migration of its own.

Revision ID: 0001
"""

from alembic import op

from web.store.migrate import LEGACY_TABLES, add_missing_columns

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    from web.store.db import Base
    bind = op.get_bind()
    tables = [Base.metadata.tables[name] for name in LEGACY_TABLES]
    Base.metadata.create_all(bind, tables=tables)
    add_missing_columns(bind, Base.metadata, only=LEGACY_TABLES)


def downgrade() -> None:
    raise NotImplementedError("the baseline is not taken back")
