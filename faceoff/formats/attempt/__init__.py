"""The files of one cell attempt, ``cells/<cell>/<arm>/attempt-<n>/``: what the flow, the
collectors and the guard leave there, one module per file."""

# What other packages may import (the import contract holds them to it).
__all__ = [
    "cell_record",
    "collector_samples",
    "journal",
    "request_plan",
    "stalls",
    "summary",
    "telemetry",
    "verdict",
]
