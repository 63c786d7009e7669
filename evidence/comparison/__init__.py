"""comparison.json: its model, read from the folder and built by pure functions."""

# What other packages may import (the import contract holds them to it).
__all__ = ["build", "fidelity", "figures", "model", "power_table", "read", "sequential"]
