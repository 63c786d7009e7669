"""The verdict of an A/A campaign on the instrument itself (pure).

An A/A campaign (``campaign.aa`` in the matrix) runs the incumbent's recipe on
every arm, so every true ratio is 1. A 95 % interval that excludes 1 is then a
false positive; at most 5 % of them may be, or the instrument reports
differences that are not there. Cell runs blocked ``host_stall`` are counted
apart: the guard refused them, which is what it is for on a loaded host.
"""

from __future__ import annotations

from collections.abc import Sequence

from evidence.comparison.model import AACalibration, CellEntry, Ratio

TARGET_RATE = 0.05
METHOD = (
    "A/A: a campaign with aa = true runs the incumbent's recipe on every arm; a 95 % ratio "
    "interval that excludes 1 is then a false positive, and the instrument passes when at most "
    "5 % of the intervals do"
)


def excludes_one(r: Ratio) -> bool:
    return r.low > 1.0 or r.high < 1.0


def aa_calibration(cells: Sequence[CellEntry]) -> AACalibration:
    ratios = [r for cell in cells for r in cell.ratios]
    wrong = [r for r in ratios if excludes_one(r)]
    cells_wrong = [c.id for c in cells if any(excludes_one(r) for r in c.ratios)]
    stalled = sum(1 for c in cells for a in c.arms if a.reason_code == "host_stall")
    compared = sum(1 for c in cells if c.ratios)
    rate = len(wrong) / len(ratios) if ratios else None
    passed = None if rate is None else rate <= TARGET_RATE
    found = AACalibration(
        intervals=len(ratios),
        excluding_one=len(wrong),
        false_positive_rate=rate,
        cells_compared=compared,
        cells_excluding_one=cells_wrong,
        blocked_host_stall=stalled,
        target_rate=TARGET_RATE,
        passed=passed,
        sentence="",
    )
    return found.model_copy(update={"sentence": _sentence(found)})


def _sentence(a: AACalibration) -> str:
    refused = (
        f"; {a.blocked_host_stall} cell run(s) blocked host_stall were not compared"
        if a.blocked_host_stall
        else ""
    )
    if a.false_positive_rate is None:
        return f"A/A: no ratio interval to judge the instrument by{refused}."
    verdict = "passed" if a.passed else "FAILED"
    return (
        f"A/A: {a.excluding_one} of {a.intervals} ratio intervals exclude 1 "
        f"({a.false_positive_rate:.1%}; at most {a.target_rate:.0%} allowed), in "
        f"{len(a.cells_excluding_one)} of {a.cells_compared} compared cells: the instrument "
        f"{verdict}{refused}."
    )
