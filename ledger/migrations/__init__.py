"""The ledger's Alembic migrations: ``env.py`` and one module per revision in ``versions/``."""
