"""Ledger revisions, oldest first: ``rev_NNNN_*.py``, each naming its ``down_revision``."""
