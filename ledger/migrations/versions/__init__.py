"""Ledger revisions, oldest first: ``rev_NNNN_*.py``, each naming its ``down_revision``."""

__all__: list[str] = []  # what other packages may import: nothing
