"""The matrix as a TOML file: reading it (defaults, grids, sources, errors naming the field),
its JSON Schema and field reference for editors, and the starting matrix `faceoff init` writes."""

# What other packages may import (the import contract holds them to it).
__all__ = ["reader", "reference", "schema", "serve_line", "starter"]
