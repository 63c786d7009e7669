"""The figures of report.html, each named by the sha256 of the data it is drawn from.

A figure on the page is ``<div class="plot" data-figure-sha256="…">`` around its SVG; the
hash covers the drawing function's name and its arguments as JSON, so the audit checks the
page without drawing anything (``Figures(draw=False)``, ``undrawn``). Drawings are made once
the page is laid out, all together, in forked workers where that is safe
(``faceoff.forked``). Why, and what the audit still checks: docs/evidence.md, "Audit".

A page rebuilt over one already drawn (a review, a restoration: the card's words change,
the measurements do not) takes each drawing whose data is unchanged from the old page
(``drawings``): the same hash is the same drawing, so only new data is drawn.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable, Mapping

import pydantic_core

from faceoff.forked import forked_map, workers

UNDRAWN = "<!-- drawing not redrawn: SHA256SUMS covers it -->"
FIGURE = re.compile(
    r'(<div class="plot"(?: id="[\w-]+")? data-figure-sha256="[0-9a-f]{64}">).*?(</div>)',
    re.DOTALL,
)


DRAWN = re.compile(
    r'<div class="plot"(?: id="[\w-]+")? data-figure-sha256="([0-9a-f]{64})">(.*?)</div>',
    re.DOTALL,
)


class Figures:
    """Places figures on the page: drawn (by ``drawn``; ``known``: drawings by their data's
    sha256, taken as they are), or (``draw=False``) only named by their data."""

    def __init__(self, *, draw: bool = True, known: Mapping[str, str] | None = None) -> None:
        self.draw = draw
        self._known = dict(known or {})
        self._pending: list[tuple[Callable[..., str], tuple[object, ...]]] = []
        self._slot = f"<!-- figure {secrets.token_hex(8)} "  # no text of the page has it

    @property
    def pending(self) -> int:
        """How many figures ``drawn`` will draw."""
        return len(self._pending)

    def __call__(
        self, render: Callable[..., str], *args: object, element_id: str | None = None
    ) -> str:
        digest = figure_sha256(render.__name__, args)
        body = UNDRAWN
        if self.draw and digest in self._known:
            body = self._known[digest]
        elif self.draw:
            body = f"{self._slot}{len(self._pending)} -->"
            self._pending.append((render, args))
        named = f' id="{element_id}"' if element_id else ""
        return f'<div class="plot"{named} data-figure-sha256="{digest}">{body}</div>'

    def drawn(self, page: str) -> str:
        """``page`` with each figure placed on it drawn in its place."""
        pending, self._pending = self._pending, []
        if not pending:
            return page

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


def drawings(page: str) -> dict[str, str]:
    """Each drawing on ``page`` by its data's sha256 (a placeholder is no drawing)."""
    return {found[1]: found[2] for found in DRAWN.finditer(page) if found[2] != UNDRAWN}
