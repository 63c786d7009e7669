"""``protected.before.json``: protected operator files' sha256 before the campaign, compared
with after restoration.

A missing file is recorded as missing and an unreadable one as unreadable: the
comparison reports them, it never stops restoration. A file that could not be
read on either side cannot be proven unchanged, so it does not count as unchanged.

Format history of ``ProtectedSnapshot.schema_version``:
  1 — first release.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable
from datetime import datetime
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec

FileState = Literal["present", "missing", "unreadable"]
Change = Literal["unchanged", "modified", "created", "deleted", "unreadable"]
MAX_BYTES = 64 * 1024 * 1024  # configuration files; the matrix refuses larger ones


class FileHash(Spec):
    path: str = Field(description="Absolute path as listed in the matrix.")
    state: FileState = Field(description="present | missing | unreadable.")
    sha256: str | None = Field(default=None, description="sha256 of the bytes, when present.")
    size: int | None = Field(default=None, description="Size in bytes, when present.")
    detail: str | None = Field(default=None, description="Why it could not be read.")


class ProtectedSnapshot(Artifact):
    """Hashes of the matrix's protected files at one moment."""

    schema_version: Literal[1] = Field(default=1, description="Snapshot format version.")
    taken_at: datetime = Field(description="When the files were hashed (UTC).")
    files: list[FileHash] = Field(description="One entry per protected path, in matrix order.")


class ProtectedCheck(Spec):
    path: str = Field(description="The protected path.")
    before: FileHash = Field(description="Before the campaign touched the incumbent.")
    after: FileHash = Field(description="After restoration.")
    change: Change = Field(description="unchanged | modified | created | deleted | unreadable.")

    @property
    def unchanged(self) -> bool:
        return self.change == "unchanged"


def hash_file(path: str) -> FileHash:
    try:
        # O_NONBLOCK: a FIFO put where a file was must not stall restoration
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return FileHash(path=path, state="missing")
    except OSError as exc:
        return FileHash(path=path, state="unreadable", detail=exc.strerror or str(exc))
    found = os.fstat(fd)
    if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_BYTES:
        os.close(fd)
        detail = "not a regular file" if not stat.S_ISREG(found.st_mode) else "too large"
        return FileHash(path=path, state="unreadable", detail=detail)
    with os.fdopen(fd, "rb") as handle:
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    return FileHash(path=path, state="present", sha256=digest, size=found.st_size)


def snapshot(paths: Iterable[str], taken_at: datetime) -> ProtectedSnapshot:
    return ProtectedSnapshot(taken_at=taken_at, files=[hash_file(p) for p in paths])


def compare(before: ProtectedSnapshot, after: ProtectedSnapshot) -> list[ProtectedCheck]:
    """One check per path of either snapshot, in the order they were listed."""
    old = {f.path: f for f in before.files}
    new = {f.path: f for f in after.files}
    paths = list(dict.fromkeys([*old, *new]))
    missing = {p: FileHash(path=p, state="missing") for p in paths}
    return [
        ProtectedCheck(
            path=p,
            before=old.get(p, missing[p]),
            after=new.get(p, missing[p]),
            change=change(old.get(p, missing[p]), new.get(p, missing[p])),
        )
        for p in paths
    ]


def change(before: FileHash, after: FileHash) -> Change:
    if "unreadable" in (before.state, after.state):
        return "unreadable"
    if before.state == after.state == "missing":
        return "unchanged"
    if before.state == "missing":
        return "created"
    if after.state == "missing":
        return "deleted"
    return "unchanged" if before.sha256 == after.sha256 else "modified"
