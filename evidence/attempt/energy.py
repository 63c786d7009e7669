"""Energy per output token of one cell attempt, over its scored window. Pure.
The same concept at another layer: ``collectors.gpu.energy``, ``evidence.comparison.energy``,
``evidence.views.card.energy``.

The joules are ``collectors.gpu.energy.cell_energy`` of the arm's ``gpu.jsonl`` over the
scored window (first scored send to last scored end: the window of the aggregate output
throughput and of goodput): NVML's total-energy counter per GPU, or, said so per GPU, its
power samples integrated. Every GPU of the arm counts, busy or not: it is the energy the
recipe held for the window. Output tokens are the completion tokens of the scored requests
that reported usage (the aggregate throughput's numerator); goodput per joule counts the
requests, and their tokens, that met the cell's SLO (``evidence.attempt.goodput``).
"""

from __future__ import annotations

from collections.abc import Sequence

from collectors.gpu.energy import cell_energy
from faceoff.formats.attempt.collector_samples import GpuSample
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.summary import CellEnergy, EnergyFigures, EnergyMethod, EnergySource

METHOD = (
    "energy = the sum over the arm's GPUs of NVML's total-energy counter at the end of the "
    "scored window minus at its start (each edge interpolated between the two samples around "
    "it), or, where a GPU has no usable counter, its power samples integrated (trapezoid), "
    "said so; energy per output token = joules / completion tokens of the scored requests; "
    "goodput per joule = requests that met the cell's SLO / joules"
)


def energy_figures(
    samples: Sequence[GpuSample],
    window: tuple[int, int],
    output_tokens: int,
    good: tuple[int, int] | None,
) -> EnergyFigures:
    """``window``: the scored window (first send, last end) in perf_counter_ns; ``good``:
    the requests that met the SLO and their completion tokens, None without an SLO."""
    energy = cell_energy(samples, CellWindow(start_ns=window[0], end_ns=window[1]))
    joules = energy.joules if energy.joules else None  # no energy: no figure per joule
    return EnergyFigures(
        gpu=energy,
        method=_method(energy),
        output_tokens=output_tokens,
        energy_per_token_j=joules / output_tokens if joules and output_tokens else None,
        output_tokens_per_j=output_tokens / joules if joules else None,
        goodput_per_joule=good[0] / joules if joules and good else None,
        goodput_tokens_per_j=good[1] / joules if joules and good else None,
    )


def _method(energy: CellEnergy) -> EnergySource | None:
    used = {d.method for d in energy.devices if d.joules is not None}
    if not used:
        return None
    if used == {EnergyMethod.COUNTER}:
        return "counter"
    return "integrated_power" if used == {EnergyMethod.INTEGRATED_POWER} else "mixed"
