"""The nights of a shared ledger together: their series, drift and cache."""

# What other packages may import (the import contract holds them to it).
__all__ = ["across_nights", "drift_tickets", "refresh", "variance"]
