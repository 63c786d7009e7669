"""Statistics of samples and ratios: pure functions of numbers."""

# What other packages may import (the import contract holds them to it).
__all__ = ["known_variance"]
