"""Durations as a person reads them (pure): apart from ``flows.cli.views.eta`` so that the
views that show them (``faceoff status``) load no matrix model.
The same concept at another layer: ``ledger.durations``.
"""

from __future__ import annotations


def clock(seconds: float) -> str:
    """``1:02:03`` or ``2:03``: a duration as a person reads it on a wall clock."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
