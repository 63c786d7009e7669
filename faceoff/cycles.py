"""Python's cycle collector paused where faceoff makes many objects that hold no cycles.

A cell of twelve thousand journal lines and plan entries is hundreds of thousands of
objects; while they are made, the collector walks every live object again and again
(a third of a million-request audit's CPU) to free nothing: they are freed by their
reference counts when the cell is done. Pausing it is process-wide, so a pause restores
the state it found (a nested pause, or a caller that had it off, is left as it was).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """No automatic cycle collection inside; cycles made inside wait for the collector's
    next run after it."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
