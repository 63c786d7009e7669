"""What one cell attempt's journal says: its summary and the parts of it."""

# What other packages may import (the import contract holds them to it).
__all__ = ["diagnostics", "pilot"]
