"""Alembic's environment: migrations run on the connection the application hands over
(web.store.migrate.upgrade), so they need no alembic.ini and no URL of their own."""

from alembic import context

from web.store.db import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
