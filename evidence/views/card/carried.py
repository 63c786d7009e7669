"""The card's word on a successor campaign: which cells were carried over from which closed
campaign (measured there, not here) and why each other cell was measured afresh.
The same concept at another layer: ``evidence.audit.carried``, ``faceoff.formats.carried``.
"""

from __future__ import annotations

from evidence.views.card.markdown import link, table
from faceoff.format import join_words
from faceoff.formats.carried import CARRIED_FILE, Carryover, source_frozen_name


def carried_lead(carried: Carryover) -> str:
    """One line under the scope: how much of the evidence this campaign did not measure."""
    total = len(carried.cells) + len(carried.fresh)
    ids = join_words([c.cell_id for c in carried.cells], "and") or "none"
    return (
        f"{len(carried.cells)} of {total} cell(s) carried over from campaign "
        f"{carried.source} (measured there, not here; see Carried over): {ids}."
    )


def carried_section(carried: Carryover) -> str:
    intro = (
        f"Each cell below is unchanged from campaign {carried.source} (matrix "
        f"`{carried.source_matrix_id[:12]}`): the cell, every arm that runs it, its seed and "
        "prompt namespace, SLO, thresholds and family registry hash the same (the content "
        f"key). Its accepted attempts were copied from that bundle, their hashes in "
        f"{link(CARRIED_FILE)}, and were judged under its frozen matrix "
        f"({link(source_frozen_name(carried.source))}); `faceoff audit` verifies them "
        "against the source bundle."
    )
    rows = [
        [
            c.cell_id,
            ", ".join(f"{r.arm} attempt {r.attempt}" for r in c.runs),
            f"`{c.cell_key[:12]}`",
        ]
        for c in carried.cells
    ]
    carried_table = table(["cell", f"attempts of {carried.source}", "content key"], rows)
    fresh = "\n".join(f"- {f.cell_id}: {f.reason}" for f in carried.fresh) or "- none"
    return (
        f"## Carried over from {carried.source}\n\n{intro}\n\n"
        f"{carried_table if rows else 'No cell was carried over.'}\n\n"
        f"Measured afresh here:\n\n{fresh}"
    )
