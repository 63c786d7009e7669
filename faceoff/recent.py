"""A few recent results kept, by file identity or by object: several readers of one
attempt (its summary, its guard verdict, its pair check, its comparison entry) each ask
for the same plan, hash or journal, which at a million requests costs seconds a time.

Only the last few are kept, so memory stays bounded by one cell, not the campaign.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, TypeVar

T = TypeVar("T")


class Recent(Generic[T]):
    """The last ``size`` values made, by key; thread-safe (a flow reads from threads)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._kept: OrderedDict[Hashable, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        value = make()  # outside the lock: a slow read never holds up another
        with self._lock:
            self._kept[key] = value
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return value


def identity(path: Path) -> tuple[str, int, int, int, int] | None:
    """What changes whenever a file's content may have: an atomic rewrite gets a new inode,
    an append a new size and mtime. None when it cannot be stated (the reader then reads,
    and reports the missing file as it always does)."""
    try:
        stat = Path(path).stat()
    except OSError:
        return None
    return (os.fspath(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
