"""Figures are placed on the page first and drawn together, each in its own place."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from evidence.views.html.report_figures import UNDRAWN, Figures, drawings, figure_sha256, undrawn

REPO = Path(__file__).resolve().parents[4]


def drawing(n: int) -> str:
    return f"<svg>{n} drawn in {os.getpid()}</svg>"


def page(figures: Figures) -> str:
    placed = [figures(drawing, n) for n in range(7)]
    # a page's own text that looks like a placeholder is left alone
    return "<!-- figure 0 -->" + "".join(placed)


def test_each_figure_is_drawn_in_its_place() -> None:
    figures = Figures()
    drawn = figures.drawn(page(figures))
    assert drawn.startswith("<!-- figure 0 -->")
    assert drawn.index("<svg>0 ") < drawn.index("<svg>1 ") < drawn.index("<svg>6 ")
    for n in range(7):
        assert f'data-figure-sha256="{figure_sha256("drawing", (n,))}"><svg>{n} ' in drawn


# A process running one thread, as the bundle writer's and the CLI's are (this session runs
# others, so here the drawing stays in process, as in a flow).
FORKED = """
import json
import os
import subprocess
import sys
from pathlib import Path
from evidence.views.html.report_figures import Figures, drawings

def drawing(n):
    return f"<svg>{n} {os.getpid()}</svg>"

figures = Figures()
page = figures.drawn("".join(figures(drawing, n) for n in range(7)))
print(os.getpid(), sorted({int(p.split("</svg>")[0].split()[1]) for p in page.split("<svg>")[1:]}))
"""


def test_a_process_running_one_thread_draws_in_forked_workers() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FORKED], cwd=REPO, capture_output=True, text=True, check=True
    )
    parent, drawers = done.stdout.split(" ", 1)
    pids = json.loads(drawers)
    assert pids and int(parent) not in pids


def test_a_page_named_only_by_data_is_the_drawn_page_undrawn() -> None:
    named = Figures(draw=False)
    figures = Figures()
    quick = page(named)
    assert quick.count(UNDRAWN) == 7 and named.drawn(quick) == quick
    assert undrawn(figures.drawn(page(figures))) == quick


def test_a_page_rebuilt_over_a_drawn_one_takes_each_unchanged_drawing_and_draws_the_rest() -> None:
    """A review changes the card's words, not the measurements: recording one drew every
    figure again (most of its time)."""
    first = Figures()
    page = first.drawn(first(bars, "ttft") + first(bars, "decode"))
    known = {digest: body.replace("<svg>", "<svg kept>") for digest, body in drawings(page).items()}
    again = Figures(known=known)
    rebuilt = again.drawn(again(bars, "ttft") + again(bars, "itl"))
    assert "<svg kept>ttft</svg>" in rebuilt and "<svg>itl</svg>" in rebuilt
    assert "decode" not in rebuilt
    assert drawings(undrawn(page)) == {}  # a placeholder is no drawing to take


def bars(label: str) -> str:
    return f"<svg>{label}</svg>"
