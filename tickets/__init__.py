"""Follow-up tickets from the failed and blocked clusters of a campaign's cell runs."""

# What other packages may import (the import contract holds them to it).
__all__ = ["cluster", "drift", "store"]
