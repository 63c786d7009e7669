"""The card's energy: each arm's GPU joules over the scored window, per output token and per
good request, and the candidates' point ratios. Renders ``comparison.json``; computes nothing.
The same concept at another layer: ``collectors.gpu.energy``, ``evidence.attempt.energy``,
``evidence.comparison.energy``.

Energy read from a simulator's virtual GPUs is labelled simulated wherever it appears.
"""

from __future__ import annotations

from evidence.views.card.markdown import Sources, table
from faceoff import format as fmt
from faceoff.formats.attempt.summary import EnergyFigures
from faceoff.formats.bundle.comparison import FIGURE_LABELS, ArmCell, CellEntry, Comparison
from faceoff.formats.reasons import Disposition

METHOD_WORDS = {
    "counter": "energy counter",
    "integrated_power": "power integrated",
    "mixed": "energy counter and power integrated",
}
NOTE = (
    "Every GPU of each arm over the scored window (first scored send to last scored end): "
    "joules by NVML's total-energy counter, or by integrating its power samples where the "
    "counter was not usable (said so); energy per output token = joules / completion tokens, "
    "goodput per joule = requests within the cell's SLO / joules. Figures read from a "
    "simulator's virtual GPUs are **simulated**."
)
RATIO_NOTE = (
    "Candidate / incumbent, one value per arm and cell: point ratios without an interval (a "
    "replicated cell's between-replicate interval is under Between replicates). Energy per "
    "output token is better lower, goodput per joule higher."
)


def tags(e: EnergyFigures) -> str:
    """'energy counter, simulated': how the figure was read."""
    said = [METHOD_WORDS[e.method]] if e.method else []
    return ", ".join([*said, *(["**simulated**"] if e.simulated else [])])


def per_token(a: ArmCell) -> str:
    """'0.412 J/tok (2.43 tok/J; energy counter, simulated)'."""
    e = a.energy
    if e is None:
        return "not measured (no GPU ids)"
    if e.energy_per_token_j is None or e.output_tokens_per_j is None:
        return f"{fmt.MISSING} ({_unknown(e)})"
    return f"{e.energy_per_token_j:.3g} J/tok ({e.output_tokens_per_j:.3g} tok/J; {tags(e)})"


def goodput(a: ArmCell) -> str:
    """'12.5 req/kJ, 840 tok/J within SLO'."""
    e = a.energy
    if e is None or e.goodput_per_joule is None or e.goodput_tokens_per_j is None:
        return fmt.MISSING
    kilo = e.goodput_per_joule * 1000
    return f"{kilo:.3g} req/kJ, {e.goodput_tokens_per_j:.3g} tok/J within SLO ({tags(e)})"


def _unknown(e: EnergyFigures) -> str:
    notes = [d.note for d in e.gpu.devices if d.note]
    return "; ".join(notes) or "no GPU energy in the window"


HEADER = ["cell", "arm", "joules (per GPU)", "read by", "mean power", "J / output token",
          "output tok / J", "goodput req / kJ", "source"]  # fmt: skip


def section(c: Comparison, sources: Sources) -> str:
    rows = [
        _row(cell, a, sources)
        for cell in c.cells
        for a in cell.arms
        if a.energy is not None and a.disposition is Disposition.ACCEPTED
    ]
    if not rows:
        return "Not measured: no arm has GPU ids, so no GPU's energy was read."
    return NOTE + "\n\n" + table(HEADER, rows) + "\n\n" + _ratios(c)


def _row(cell: CellEntry, a: ArmCell, sources: Sources) -> list[str]:
    e = a.energy
    assert e is not None
    files = [a.sources[k] for k in ("summary", "gpu") if k in a.sources]
    each = ", ".join(_joules(d.joules) for d in e.gpu.devices)
    power = e.gpu.mean_power_w
    return [
        cell.id,
        a.arm,
        f"{_joules(e.gpu.joules)} ({each})",
        tags(e) or fmt.MISSING,
        fmt.MISSING if power is None else f"{power:,.0f} W",
        fmt.MISSING if e.energy_per_token_j is None else f"{e.energy_per_token_j:.3g}",
        fmt.MISSING if e.output_tokens_per_j is None else f"{e.output_tokens_per_j:.3g}",
        fmt.MISSING if e.goodput_per_joule is None else f"{e.goodput_per_joule * 1000:.3g}",
        sources.ref(f"cells[{cell.id}].arms[{a.arm}].energy", files),
    ]


def _joules(value: float | None) -> str:
    return fmt.MISSING if value is None else f"{value:,.0f} J"


def _ratios(c: Comparison) -> str:
    rows = [
        [cell.id, r.candidate, FIGURE_LABELS[r.metric], f"{r.ratio:.2f}×",
         "higher" if r.higher_is_better else "lower", "simulated" if r.simulated else "measured"]
        for cell in c.cells
        for r in cell.figure_ratios
    ]  # fmt: skip
    if not rows:
        return "No comparable pair has energy figures on both arms, so no energy ratio is given."
    header = ["cell", "candidate", "figure", "point ratio", "better", "energy"]
    return RATIO_NOTE + "\n\n" + table(header, rows)
