"""The verdict of an A/A campaign on the instrument itself (pure).
The same concept at another layer: ``matrix.aa``.

An A/A campaign (``campaign.aa`` in the matrix) runs the incumbent's recipe on
every arm, so every true ratio is 1. A 95 % interval that excludes 1 is then a
false positive, and a calibrated instrument gives one in 20. The verdict is a one-sided
binomial test: it fails when as many exclusions as seen, or more, would be rarer than
5 % from a calibrated instrument (a plain "at most 5 % of the intervals" fails about
30 % of calibrated campaigns of 12 intervals). Descriptive intervals (too few requests
to be calibrated) are not counted. Cell runs blocked ``host_stall`` are counted
apart: the guard refused them, which is what it is for on a loaded host.
"""

from __future__ import annotations

from collections.abc import Sequence

from evidence.stats.fidelity import upper_tail
from faceoff.formats.bundle.comparison import AACalibration, CellEntry, Ratio

TARGET_RATE = 0.05  # the share of 95 % intervals a calibrated instrument sees exclude 1
SIGNIFICANCE = 0.05  # the test's: a calibrated instrument fails one A/A campaign in 20
METHOD = (
    "A/A: a campaign with aa = true runs the incumbent's recipe on every arm; a 95 % ratio "
    "interval that excludes 1 is then a false positive; the instrument fails when the "
    "exclusions seen, or more, have binomial probability below 5 % for n calibrated intervals "
    "each excluding 1 with probability 5 % (descriptive intervals are not counted)"
)


def excludes_one(r: Ratio) -> bool:
    return r.low > 1.0 or r.high < 1.0


def aa_calibration(cells: Sequence[CellEntry]) -> AACalibration:
    ratios = [r for cell in cells for r in cell.ratios if r.verdict != "descriptive"]
    wrong = [r for r in ratios if excludes_one(r)]
    cells_wrong = [c.id for c in cells if any(excludes_one(r) for r in _counted(c))]
    stalled = sum(1 for c in cells for a in c.arms if a.reason_code == "host_stall")
    compared = sum(1 for c in cells if _counted(c))
    rate = len(wrong) / len(ratios) if ratios else None
    p_value = upper_tail(len(wrong), len(ratios), TARGET_RATE) if ratios else None
    passed = None if p_value is None else p_value >= SIGNIFICANCE
    found = AACalibration(
        intervals=len(ratios),
        excluding_one=len(wrong),
        false_positive_rate=rate,
        cells_compared=compared,
        cells_excluding_one=cells_wrong,
        blocked_host_stall=stalled,
        target_rate=TARGET_RATE,
        p_value=p_value,
        passed=passed,
        sentence="",
    )
    return found.model_copy(update={"sentence": _sentence(found)})


def _counted(cell: CellEntry) -> list[Ratio]:
    return [r for r in cell.ratios if r.verdict != "descriptive"]


def _sentence(a: AACalibration) -> str:
    refused = (
        f"; {a.blocked_host_stall} cell run(s) blocked host_stall were not compared"
        if a.blocked_host_stall
        else ""
    )
    if a.false_positive_rate is None:
        return f"A/A: no ratio interval to judge the instrument by{refused}."
    verdict = "passed" if a.passed else "FAILED"
    chance = f"{a.p_value:.1%}" if a.p_value is not None else "?"
    return (
        f"A/A: {a.excluding_one} of {a.intervals} ratio intervals exclude 1 "
        f"({a.false_positive_rate:.1%}; a calibrated instrument excludes {a.target_rate:.0%}, "
        f"and gives this many or more with probability {chance}, failing below "
        f"{SIGNIFICANCE:.0%}), in {len(a.cells_excluding_one)} of {a.cells_compared} compared "
        f"cells: the instrument {verdict}{refused}."
    )
