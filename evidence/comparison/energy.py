"""Energy figures of a cell compared: candidate / incumbent point ratios. Pure.
The same concept at another layer: ``collectors.gpu.energy``, ``evidence.attempt.energy``,
``evidence.views.card.energy``.

Energy per output token and goodput per joule are one value per arm and cell (the arm's
GPUs over the scored window, ``evidence.attempt.energy``), so within a cell their ratio
is a point ratio with no interval; a replicated cell's between-replicate interval of
them is in ``replicated`` (``evidence.comparison.replicates``), and the declared rule
judges them as cell figures (``evidence.comparison.ruling``).
"""

from __future__ import annotations

from collections.abc import Sequence

from faceoff.formats.bundle.comparison import ArmCell, FigureRatio
from matrix.rule import ENERGY_METRICS
from workload.metrics import higher_is_better


def energy_value(arm: ArmCell, metric: str) -> float | None:
    """The arm's energy figure ``metric`` in the cell; None where it has none."""
    found: float | None = getattr(arm.energy, metric) if arm.energy else None
    return found


def figure_ratios(arms: Sequence[ArmCell], candidates: Sequence[str]) -> list[FigureRatio]:
    """Each comparable candidate's energy point ratios against the incumbent (``arms[0]``)."""
    incumbent = arms[0]
    found = []
    for candidate in candidates:
        arm = next(a for a in arms if a.arm == candidate)
        for metric in ENERGY_METRICS:
            base, top = energy_value(incumbent, metric), energy_value(arm, metric)
            if base is None or top is None or base <= 0:
                continue  # a ratio to nothing says nothing
            found.append(
                FigureRatio(
                    metric=metric,
                    candidate=candidate,
                    ratio=top / base,
                    higher_is_better=higher_is_better(metric),
                    simulated=any(a.energy and a.energy.simulated for a in (incumbent, arm)),
                )
            )
    return found
