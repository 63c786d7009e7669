"""The ledger: SQLModel tables, their Alembic migrations and session helpers; SQLite by
default, PostgreSQL by URL. It indexes campaigns; the bundle is the evidence."""
