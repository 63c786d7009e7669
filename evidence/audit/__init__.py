"""faceoff audit: re-verifying a bundle from its native artifacts."""

# What other packages may import (the import contract holds them to it).
__all__ = ["checklist", "freshness", "reverify"]
