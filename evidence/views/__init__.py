"""Renderers of the comparison: the result card, the HTML pages, terminal views."""

# What other packages may import (the import contract holds them to it).
__all__ = ["card", "export", "html", "terminal"]
