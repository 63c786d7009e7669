"""The ledger's Alembic migrations: ``env.py`` and one module per revision in ``versions/``."""

__all__: list[str] = []  # what other packages may import: nothing
