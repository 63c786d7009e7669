"""What the history remembers of each bundle: its audit outcome and its night, valid only
while the bundle stays as it was.

An audit is far too slow to repeat for a year of nights on every ``faceoff history``, so
each outcome is kept in ``<workdir>/.history/cache.json`` under the bundle's *state* (the
faceoff version, the fingerprints of the keys the audit trusted, every file's path, size and
modification time). A missing, unreadable or older cache file is an empty one. Why these
stats, and what they cannot see: docs/history.md, "Audits, cached".

Format history of ``HistoryCache.schema_version``:
  1 — first release.
  2 — nights as columns (``Night`` 2); the state no longer hashes ``SHA256SUMS``'s bytes.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from evidence.history.night import Night
from faceoff import __version__
from faceoff.artifact import Artifact, Spec
from faceoff.bounded import walk
from faceoff.credentials import Credentials
from faceoff.errors import FaceoffError
from faceoff.files import write_text_atomic

CACHE_FILE = Path(".history") / "cache.json"
KEY_LABEL = b"faceoff audit cache"


class AuditOutcome(Spec):
    ok: bool = Field(description="The audit found nothing.")
    failed: list[str] = Field(description="What the failed checks verify, in the audit's order.")
    first: str | None = Field(description="The first finding (file: field: problem), if any.")


class CacheEntry(Spec):
    state: str = Field(description="sha256 of the bundle's state when this was recorded.")
    audit: AuditOutcome | None = Field(description="The audit's outcome on that state.")
    night: Night | None = Field(description="The night read from the bundle; None if unreadable.")
    host: str | None = Field(
        default=None, description="The bundle's host (MANIFEST.json), also when its night is not."
    )
    problem: str | None = Field(description="Why the night could not be read, when it could not.")


class HistoryCache(Artifact):
    schema_version: Literal[2] = Field(default=2, description="History cache format version.")
    entries: dict[str, CacheEntry] = Field(description="Bundle folder (absolute) -> its entry.")


Auditor = Callable[[Path], AuditOutcome]


def trust_fingerprint(credentials: Credentials) -> str:
    """Tells what an audit trusted apart (public keys by fingerprint, the shared secret by an
    HMAC of a label) without writing anything the secret could be recovered from."""
    parts = sorted(k.fingerprint for k in credentials.trust.keys)
    if credentials.hmac is not None:
        parts.append(hmac.new(credentials.hmac, KEY_LABEL, hashlib.sha256).hexdigest()[:16])
    return ",".join(parts) or "unsigned"


def bundle_state(bundle: Path, credentials: Credentials) -> str:
    digest = hashlib.sha256(f"{__version__}\n{trust_fingerprint(credentials)}\n".encode())
    found = (e for e in walk(bundle) if e.kind != "dir" or e.problem is not None)
    for entry in sorted(found, key=lambda e: e.name):
        digest.update(f"{entry.name}\0{entry.size}\0{entry.mtime_ns}\n".encode())
    return digest.hexdigest()


def load_cache(path: Path) -> HistoryCache:
    try:
        return HistoryCache.read(path)
    except (FaceoffError, ValidationError, OSError):  # rebuilt from the bundles
        return HistoryCache(entries={})


def save_cache(path: Path, cache: HistoryCache) -> None:
    """Compact JSON: a year of nights from several hosts is read on every run."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, cache.model_dump_json() + "\n", replace=True)


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


def audit_entry(
    bundle: Path, outcome: AuditOutcome, credentials: Credentials
) -> tuple[str, CacheEntry]:
    """The cache entry recording ``outcome`` for the bundle as it is now (a nightly run's
    own audit, or a generated night's planted one), under the bundle's key in the cache."""
    state = bundle_state(bundle, credentials)
    entry = CacheEntry(state=state, audit=outcome, night=None, problem=None)
    return str(Path(bundle).resolve()), entry
