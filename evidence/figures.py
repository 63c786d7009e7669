"""The figures of report.html, each named by the sha256 of the data it is drawn from.

A figure on the page is ``<div class="plot" data-figure-sha256="…">`` around its SVG.
The hash covers the drawing function's name and its arguments (comparison entries,
an attempt's samples) as JSON, so it can be recomputed from the native files without
drawing anything. The audit renders the page with ``Figures(draw=False)`` and compares
it with the file once every drawing is cut out of both (``undrawn``): the text, every
number in it and every figure's data hash must match, while the drawings themselves
are covered by ``SHA256SUMS`` (and the seal, when signed); drawing 84 matplotlib
figures again would cost the audit more than all its other recomputation together.
``faceoff audit --redraw`` draws them again and compares the page byte for byte.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

import pydantic_core

UNDRAWN = "<!-- drawing not redrawn: SHA256SUMS covers it -->"
FIGURE = re.compile(
    r'(<div class="plot"(?: id="[\w-]+")? data-figure-sha256="[0-9a-f]{64}">).*?(</div>)',
    re.DOTALL,
)


@dataclass(frozen=True)
class Figures:
    """Places figures on the page: drawn, or (``draw=False``) only named by their data."""

    draw: bool = True

    def __call__(
        self, render: Callable[..., str], *args: object, element_id: str | None = None
    ) -> str:
        digest = figure_sha256(render.__name__, args)
        body = render(*args) if self.draw else UNDRAWN
        named = f' id="{element_id}"' if element_id else ""
        return f'<div class="plot"{named} data-figure-sha256="{digest}">{body}</div>'


DRAWN = Figures()


def figure_sha256(name: str, args: tuple[object, ...]) -> str:
    """sha256 of the drawing function's name and its arguments, as JSON."""
    return hashlib.sha256(pydantic_core.to_json([name, args])).hexdigest()


def undrawn(page: str) -> str:
    """The page with every figure's drawing replaced by a placeholder, its hash kept."""
    return FIGURE.sub(lambda found: found[1] + UNDRAWN + found[2], page)
