"""Alembic's entry point for the store: runs on the connection `turnout.store.engine` hands in."""

from __future__ import annotations

from alembic import context

from turnout.store.models import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=True,
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
