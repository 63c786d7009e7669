"""The verdict of an A/A campaign on the instrument itself (pure).

An A/A campaign (``campaign.aa`` in the matrix) runs the incumbent's recipe on
every arm, so every true ratio is 1. A 95 % interval that excludes 1 is then a
false positive; at most 5 % of them may be, or the instrument reports
differences that are not there. Cell runs blocked ``host_stall`` are counted
apart: the guard refused them, which is what it is for on a loaded host.
"""

from __future__ import annotations

from collections.abc import Sequence

from evidence.comparison import AACalibration, CellEntry, Ratio

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
    rate = len(wrong) / len(ratios) if ratios else None
    passed = None if rate is None else rate <= TARGET_RATE
    return AACalibration(
        intervals=len(ratios),
        excluding_one=len(wrong),
        false_positive_rate=rate,
        cells_compared=sum(1 for c in cells if c.ratios),
        cells_excluding_one=cells_wrong,
        blocked_host_stall=stalled,
        target_rate=TARGET_RATE,
        passed=passed,
        sentence=_sentence(len(ratios), len(wrong), rate, passed, stalled),
    )


def _sentence(n: int, wrong: int, rate: float | None, passed: bool | None, stalled: int) -> str:
    refused = f"; {stalled} cell run(s) blocked host_stall were not compared" if stalled else ""
    if rate is None:
        return f"A/A: no ratio interval to judge the instrument by{refused}."
    verdict = "passed" if passed else "FAILED"
    return (
        f"A/A: {wrong} of {n} ratio intervals exclude 1 ({rate:.1%}; at most "
        f"{TARGET_RATE:.0%} allowed): the instrument {verdict}{refused}."
    )
