"""Recorded human decisions on a bundle."""

# What other packages may import (the import contract holds them to it).
__all__ = ["decision", "log", "recording"]
