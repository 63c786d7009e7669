"""Figures are placed on the page first and drawn together, each in its own place."""

from __future__ import annotations

import os

from evidence.figures import UNDRAWN, Figures, figure_sha256, undrawn


def drawing(n: int) -> str:
    return f"<svg>{n} drawn in {os.getpid()}</svg>"


def page(figures: Figures) -> str:
    placed = [figures(drawing, n) for n in range(7)]
    # a page's own text that looks like a placeholder is left alone
    return "<!-- figure 0 -->" + "".join(placed)


def test_each_figure_is_drawn_in_its_place_in_worker_processes() -> None:
    figures = Figures()
    drawn = figures.drawn(page(figures))
    bodies = [drawn.split(f"<svg>{n} drawn in ", 1)[1].split("</svg>")[0] for n in range(7)]
    assert drawn.startswith("<!-- figure 0 -->")
    assert drawn.index("<svg>0 ") < drawn.index("<svg>1 ") < drawn.index("<svg>6 ")
    assert str(os.getpid()) not in bodies  # a single-threaded caller forks its drawing
    for n in range(7):
        assert f'data-figure-sha256="{figure_sha256("drawing", (n,))}"><svg>{n} ' in drawn


def test_a_page_named_only_by_data_is_the_drawn_page_undrawn() -> None:
    named = Figures(draw=False)
    figures = Figures()
    quick = page(named)
    assert quick.count(UNDRAWN) == 7 and named.drawn(quick) == quick
    assert undrawn(figures.drawn(page(figures))) == quick
