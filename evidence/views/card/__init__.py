"""RESULT.md, the result card, and the Markdown it is written in."""

# What other packages may import (the import contract holds them to it).
__all__ = ["render"]
