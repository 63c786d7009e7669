"""Conventions of the matrix's spec fields: names, bounds, and fields added after the first
release.
"""

from __future__ import annotations

from collections.abc import Callable

SLUG = r"^[a-z0-9][a-z0-9._-]{0,62}$"


# Upper bounds far beyond any real campaign, so a typo (10^12 requests) is an error, not a hang.
MAX_TOKENS = 10_000_000  # input_tokens, max_tokens: ten times the longest contexts served today

MAX_CONCURRENCY = 4096

MAX_REQUESTS = 100_000  # scored requests of one cell on one arm

MAX_WARMUPS = 10_000

MAX_DEADLINE_S = 7 * 24 * 3600.0  # a week, for any deadline

MIN_PERIOD_S = 0.01  # sampling faster than this measures the sampler, not the engine

MAX_PERIOD_S = 60.0  # slower, a cell of minutes has too few samples to judge coverage


def omitted_at(default: object) -> Callable[[object], bool]:
    """Leave a field added after the first release out of the dump while it holds its default,
    so a matrix frozen before the field existed keeps its id (the id hashes the dump)."""
    return lambda value: value == default


class FieldError(ValueError):
    """A check across fields that names the field to fix, as a path from the model that
    raises it (``("cells", 3, "input_tokens")`` from the matrix, ``("output_words",)`` from
    a cell), so that the loader's message starts with that field (``matrix.toml.errors``)."""

    def __init__(self, loc: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc
