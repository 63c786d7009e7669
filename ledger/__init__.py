"""The ledger: SQLModel tables, their Alembic migrations and session helpers; SQLite by
default, PostgreSQL by URL. It indexes campaigns; the bundle is the evidence."""

# What other packages may import (the import contract holds them to it).
__all__ = [
    "campaigns",
    "cells",
    "db",
    "durations",
    "history",
    "hosts",
    "migrate",
    "restoration",
    "tables",
]
