"""The figures of report.html, each named by the sha256 of the data it is drawn from.

A figure on the page is ``<div class="plot" data-figure-sha256="…">`` around its SVG; the
hash covers the drawing function's name and its arguments as JSON, so the audit checks the
page without drawing anything (``Figures(draw=False)``, ``undrawn``). Drawings are made once
the page is laid out, all together, in forked workers where that is safe
(``faceoff.forked``). Why, and what the audit still checks: docs/evidence.md, "Audit".
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable

import pydantic_core

from faceoff.forked import forked_map, workers

UNDRAWN = "<!-- drawing not redrawn: SHA256SUMS covers it -->"
FIGURE = re.compile(
    r'(<div class="plot"(?: id="[\w-]+")? data-figure-sha256="[0-9a-f]{64}">).*?(</div>)',
    re.DOTALL,
)


class Figures:
    """Places figures on the page: drawn (by ``drawn``), or (``draw=False``) only named by
    their data."""

    def __init__(self, *, draw: bool = True) -> None:
        self.draw = draw
        self._pending: list[tuple[Callable[..., str], tuple[object, ...]]] = []
        self._slot = f"<!-- figure {secrets.token_hex(8)} "  # no text of the page has it

    def __call__(
        self, render: Callable[..., str], *args: object, element_id: str | None = None
    ) -> str:
        digest = figure_sha256(render.__name__, args)
        body = UNDRAWN
        if self.draw:
            body = f"{self._slot}{len(self._pending)} -->"
            self._pending.append((render, args))
        named = f' id="{element_id}"' if element_id else ""
        return f'<div class="plot"{named} data-figure-sha256="{digest}">{body}</div>'

    def drawn(self, page: str) -> str:
        """``page`` with each figure placed on it drawn in its place."""
        pending, self._pending = self._pending, []

        def draw(index: int) -> str:
            render, args = pending[index]
            return render(*args)

        drawings = forked_map(draw, len(pending), workers(len(pending)))
        slots = re.compile(re.escape(self._slot) + r"(\d+) -->")
        return slots.sub(lambda found: drawings[int(found[1])], page)


def figure_sha256(name: str, args: tuple[object, ...]) -> str:
    """sha256 of the drawing function's name and its arguments, as JSON."""
    return hashlib.sha256(pydantic_core.to_json([name, args])).hexdigest()


def undrawn(page: str) -> str:
    """The page with every figure's drawing replaced by a placeholder, its hash kept."""
    return FIGURE.sub(lambda found: found[1] + UNDRAWN + found[2], page)
