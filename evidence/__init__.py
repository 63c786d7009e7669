"""What people read and what auditors check: statistics, the comparison, the result card,
the HTML report, the bundle and its seal, the audit and recorded reviews, all read from
the campaign folder."""

# What other packages may import (the import contract holds them to it).
__all__ = [
    "attempt",
    "audit",
    "bundle",
    "comparison",
    "folder",
    "history",
    "reviews",
    "stats",
    "views",
]
