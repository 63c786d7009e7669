"""Writing the bundle in place, and the JSON Schemas it ships."""

# What other packages may import (the import contract holds them to it).
__all__ = ["schema_export", "write"]
