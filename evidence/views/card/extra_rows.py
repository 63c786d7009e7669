"""Headline rows of the result card shown only in cells where some arm has the figure: draft
acceptance beside the decode rate, energy per output token and goodput per joule (labelled
simulated where they are). Renders ``comparison.json``; computes nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evidence.views.card import energy as card_energy
from evidence.views.card import speculation as card_speculation
from evidence.views.card.markdown import Sources
from faceoff.formats.bundle.comparison import ArmCell, CellEntry

Render = Callable[[ArmCell], str]
Value = Callable[[CellEntry, str, Render], str]  # an arm's cell as the headline shows it


@dataclass(frozen=True)
class ExtraRow:
    """A headline row shown only in cells where some arm has the figure."""

    label: str
    key: str  # the ArmCell field, for the source reference
    files: tuple[str, ...]  # ArmCell.sources keys the figure comes from
    render: Render
    shown: Callable[[ArmCell], bool]


SPECULATION_ROW = ExtraRow(
    "draft acceptance (speculative decoding)",
    "speculation",
    ("telemetry", "engine"),
    lambda a: card_speculation.words(a.speculation),
    lambda a: a.speculation is not None,
)
ENERGY_ROWS = (
    ExtraRow("energy per output token (GPUs, scored window)", "energy", ("summary", "gpu"),
             card_energy.per_token, lambda a: a.energy is not None),
    ExtraRow("goodput per joule", "energy", ("summary", "gpu"), card_energy.goodput,
             lambda a: a.energy is not None and a.energy.goodput_per_joule is not None),
)  # fmt: skip


def extra_rows(
    cell: CellEntry, names: list[str], sources: Sources, value: Value, *extras: ExtraRow
) -> list[list[str]]:
    """The rows of ``extras`` some arm of the cell has, each arm's by ``value``."""
    rows = []
    for extra in extras:
        if not any(extra.shown(a) for a in cell.arms):
            continue
        files = [a.sources[k] for a in cell.arms for k in extra.files if k in a.sources]
        ref = sources.ref(f"cells[{cell.id}].arms[*].{extra.key}", files)
        rows.append(["", extra.label, *(value(cell, a, extra.render) for a in names), ref])
    return rows
