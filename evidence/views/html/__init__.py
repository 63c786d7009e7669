"""report.html and history.html with their figures: the only matplotlib users."""

# What other packages may import (the import contract holds them to it).
__all__ = ["history_page"]
