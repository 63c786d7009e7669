"""Files' sha256, each computed once, many at a time.

An audit checks every file against SHA256SUMS and most of them again against the
receipt: gigabytes at a million requests. hashlib and file reads release the GIL, so
threads hash on every CPU at once; a file that cannot be read here is left to the
caller's own read, which reports it as it always does.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from faceoff.canonical import file_sha256
from faceoff.errors import FaceoffError


class FileDigests:
    """``digests(path)``: the file's sha256, hashed on the first ask or by ``prefetch``."""

    def __init__(self) -> None:
        self._known: dict[Path, str] = {}

    def prefetch(self, paths: Sequence[Path], threads: int) -> None:
        """Hash ``paths`` in ``threads`` threads, largest first so that no thread is left
        with a big file at the end."""
        by_size = sorted(paths, key=_size, reverse=True)
        with ThreadPoolExecutor(max(1, threads), thread_name_prefix="sha256") as pool:
            for path, digest in zip(by_size, pool.map(_digest, by_size), strict=True):
                if digest is not None:
                    self._known[path] = digest

    def __call__(self, path: Path) -> str:
        found = self._known.get(path)
        if found is None:
            found = self._known[path] = file_sha256(path)
        return found


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _digest(path: Path) -> str | None:
    try:
        return file_sha256(path)
    except (OSError, FaceoffError):  # the caller's own read reports it
        return None
