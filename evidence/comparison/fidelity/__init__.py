"""Fidelity measured on the lanes: comparison.json's entries of each fidelity cell."""

# What other packages may import (the import contract holds them to it).
__all__ = ["criteria", "entries"]
