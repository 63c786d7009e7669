"""What is sent and how it is timed: prompt synthesis, the streaming client process, the
request metrics and the request journal."""

# What other packages may import (the import contract holds them to it).
__all__ = [
    "cell_client",
    "fidelity",
    "journal",
    "ladder",
    "lag",
    "metrics",
    "needle_bounds",
    "plan",
    "records",
    "request",
    "schedule",
    "tokenizer",
    "traffic",
]
