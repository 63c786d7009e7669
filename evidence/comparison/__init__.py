"""comparison.json: read from the folder and built by pure functions (its model:
``faceoff.formats.bundle.comparison``)."""

# What other packages may import (the import contract holds them to it).
__all__ = ["build", "fidelity", "figures", "power_table", "read", "sequential"]
