"""A bundle's history-cache entry made current: kept while the bundle's state holds, else
audited and its night read again (``faceoff.formats.history_cache`` is the cache's file).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path

from faceoff.errors import FaceoffError
from faceoff.formats.history_cache import AuditOutcome, CacheEntry

Auditor = Callable[[Path], AuditOutcome]


def refresh(
    bundle: Path, cached: CacheEntry | None, *, state: str, auditor: Auditor, fallback: date
) -> CacheEntry:
    """The bundle's entry for its current state: the cached one while the state holds,
    else audited and read again (the audit outcome alone is kept where only it was
    recorded)."""
    current = cached if cached is not None and cached.state == state else None
    if current is not None and current.audit is not None and (current.night or current.problem):
        return current
    audit = current.audit if current is not None and current.audit else auditor(bundle)
    from evidence.history.night_read import read_night  # noqa: PLC0415  (a cache hit reads no comparison)

    try:
        night = read_night(bundle, fallback)
        return CacheEntry(state=state, audit=audit, night=night, problem=None, host=night.host)
    except FaceoffError as exc:
        return CacheEntry(
            state=state, audit=audit, night=None, problem=exc.message, host=_host(bundle)
        )


def _host(bundle: Path) -> str | None:
    from evidence.history.night_read import read_host  # noqa: PLC0415  (as in refresh)

    try:
        return read_host(bundle)
    except FaceoffError:
        return None
