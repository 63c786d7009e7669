"""Alembic's environment for the ledger: the migrations run on the connection that
``ledger.migrate`` hands over, inside its transaction and under its lock, never on a URL of
their own."""

from __future__ import annotations

from alembic import context

context.configure(connection=context.config.attributes["connection"])
with context.begin_transaction():
    context.run_migrations()
