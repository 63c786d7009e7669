"""Terminal views of a bundle for the command line."""

# What other packages may import (the import contract holds them to it).
__all__ = ["console", "diagnostic_table"]
