"""Fields of the matrix that must say the same thing, read together (docs/matrix.md,
"Checks and limits")."""

# What other packages may import (the import contract holds them to it).
__all__ = ["findings"]
