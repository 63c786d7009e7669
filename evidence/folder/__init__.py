"""The bundle folder: where its files are, their sums, and the records of what it carries."""

# What other packages may import (the import contract holds them to it).
__all__ = ["layout", "seal", "sums"]
