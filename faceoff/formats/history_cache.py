"""``.history/cache.json``: what the history remembers of each bundle, its audit outcome and
its night, valid only while the bundle stays as it was.

An audit is far too slow to repeat for a year of nights on every ``faceoff history``, so
each outcome is kept in ``<workdir>/.history/cache.json`` under the bundle's *state* (the
faceoff version, the fingerprints of the keys the audit trusted, every file's path, size and
modification time). A missing, unreadable or older cache file is an empty one. Why these
stats, and what they cannot see: docs/history.md, "Audits, cached".

The state is made of public facts, so anyone who can write the cache could forge an entry
for it: each entry is MAC'd (HMAC-SHA256) with a secret of this host, ``.history/secret``
(0600, made on first use), and an entry whose MAC does not verify is poisoned: its night is
reported failed and audited afresh on the next run, never shown from the cache.

Format history of ``HistoryCache.schema_version``:
  1 — first release.
  2 — nights as columns (``Night`` 2); the state no longer hashes ``SHA256SUMS``'s bytes.
  3 — ``macs``: each entry's HMAC under the host's secret; an older file is an empty one.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from faceoff import __version__
from faceoff.artifact import Artifact, Spec
from faceoff.bounded import open_regular, walk
from faceoff.credentials import Credentials
from faceoff.errors import FaceoffError
from faceoff.files import write_text_atomic
from faceoff.formats.night import Night

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
    schema_version: Literal[3] = Field(default=3, description="History cache format version.")
    entries: dict[str, CacheEntry] = Field(description="Bundle folder (absolute) -> its entry.")
    macs: dict[str, str] = Field(
        default_factory=dict, description="Bundle folder -> HMAC-SHA256 of its entry (hex)."
    )


@dataclass(frozen=True)
class LoadedCache:
    """The cache's entries whose MAC verifies, and the folders of those whose does not."""

    entries: dict[str, CacheEntry]
    poisoned: list[str]


SECRET_FILE = "secret"  # beside the cache: the host's MAC key


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


def load_cache(path: Path) -> LoadedCache:
    try:
        cache = HistoryCache.read(path)
    except (FaceoffError, ValidationError, OSError):  # rebuilt from the bundles
        return LoadedCache({}, [])
    secret = host_secret(Path(path).parent)
    kept, poisoned = {}, []
    for folder, entry in cache.entries.items():
        if hmac.compare_digest(cache.macs.get(folder, ""), entry_mac(secret, folder, entry)):
            kept[folder] = entry
        else:
            poisoned.append(folder)
    return LoadedCache(kept, poisoned)


def save_cache(path: Path, cache: HistoryCache) -> None:
    """Compact JSON, each entry MAC'd: a year of nights from several hosts is read on every
    run."""
    secret = host_secret(Path(path).parent)
    macs = {folder: entry_mac(secret, folder, e) for folder, e in cache.entries.items()}
    text = cache.model_copy(update={"macs": macs}).model_dump_json() + "\n"
    write_text_atomic(path, text, replace=True)


def entry_mac(secret: bytes, folder: str, entry: CacheEntry) -> str:
    message = f"{folder}\0{entry.model_dump_json()}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def host_secret(folder: Path) -> bytes:
    """The host's MAC key in ``folder`` (the cache's), made 0600 in a 0700 folder on first use;
    refused when others may read it (they could forge entries)."""
    path = Path(folder) / SECRET_FILE
    if not os.path.lexists(path):
        Path(folder).mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(FileExistsError):  # another history run made it first
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_bytes(32))
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(fd).st_mode & 0o077:
            raise FaceoffError(
                "the history cache's secret is readable by others, who could forge entries",
                where=str(path),
                fix=f"run chmod 600 {path}",
            )
        return handle.read(64)


def audit_entry(
    bundle: Path, outcome: AuditOutcome, credentials: Credentials
) -> tuple[str, CacheEntry]:
    """The cache entry recording ``outcome`` for the bundle as it is now (a nightly run's
    own audit, or a generated night's planted one), under the bundle's key in the cache."""
    state = bundle_state(bundle, credentials)
    entry = CacheEntry(state=state, audit=outcome, night=None, problem=None)
    return str(Path(bundle).resolve()), entry
