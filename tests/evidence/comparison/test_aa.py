"""The A/A verdict on the instrument: intervals excluding 1 against the 5 % a 95 % one allows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evidence.comparison.aa import aa_calibration
from evidence.comparison.cells import ratio_verdict
from faceoff.errors import FaceoffError
from faceoff.formats.bundle.comparison import ArmCell, CellEntry, Ratio
from matrix.toml.reader import load_matrix

AA_MATRIX = Path(__file__).resolve().parents[3] / "matrix" / "examples" / "sim-aa.toml"


def ratio(low: float, high: float) -> Ratio:
    return Ratio(
        metric="decode_tps", candidate="b", ratio=(low + high) / 2, low=low, high=high,
        confidence=0.95, resamples=2000, seed=1, n_incumbent=8, n_candidate=8,
        blocks_incumbent=8, blocks_candidate=8, higher_is_better=True,
        verdict=ratio_verdict(low, high, higher_is_better=True),
    )  # fmt: skip


def cell(cell_id: str, ratios: list[Ratio], *reasons: str) -> CellEntry:
    """A cell entry with only what the A/A verdict reads (unvalidated: the rest is unused)."""
    arms = [
        ArmCell.model_construct(**only(arm=f"a{i}", reason_code=r)) for i, r in enumerate(reasons)
    ]
    return CellEntry.model_construct(**only(id=cell_id, ratios=ratios, arms=arms))


def only(**fields: Any) -> dict[str, Any]:
    return fields


def test_an_instrument_within_five_percent_passes() -> None:
    cells = [cell(f"c{i}", [ratio(0.95, 1.04)] * 2, "accepted", "accepted") for i in range(10)]
    cells.append(cell("c10", [ratio(1.01, 1.10)], "accepted", "accepted"))
    got = aa_calibration(cells)
    assert (got.intervals, got.excluding_one, got.passed) == (21, 1, True)
    assert got.cells_excluding_one == ["c10"]
    assert got.sentence.startswith(
        "A/A: 1 of 21 ratio intervals exclude 1 (4.8%; a calibrated instrument excludes 5%, and "
        "gives this many or more with probability 65.9%, failing below 5%), in 1 of 11 "
        "compared cells: the instrument passed"
    )


@pytest.mark.parametrize(("excluding", "passed"), [(2, True), (3, False)])
def test_the_verdict_is_a_binomial_test_not_a_share(excluding: int, passed: bool) -> None:
    """2 of 12 is 17 %, yet one calibrated campaign in nine shows it; 3 of 12, one in 50."""
    wrong = [ratio(1.01, 1.10)] * excluding + [ratio(0.95, 1.04)] * (12 - excluding)
    got = aa_calibration([cell(f"c{i}", [r], "accepted") for i, r in enumerate(wrong)])
    assert got.passed is passed
    assert got.p_value == pytest.approx({2: 0.1184, 3: 0.0196}[excluding], abs=1e-4)


def test_descriptive_intervals_are_not_counted() -> None:
    few = ratio(1.5, 2.5).model_copy(update={"verdict": "descriptive"})
    got = aa_calibration([cell("c0", [few, ratio(0.95, 1.04)], "accepted")])
    assert (got.intervals, got.excluding_one, got.cells_excluding_one) == (1, 0, [])


def test_an_instrument_that_sees_differences_that_are_not_there_fails() -> None:
    cells = [
        cell("c0", [ratio(2.02, 2.84)] * 3, "accepted", "accepted"),  # 2.41x of identical arms
        cell("c1", [ratio(0.97, 1.02)] * 3, "accepted", "accepted"),
        cell("c2", [], "accepted", "host_stall"),
    ]
    got = aa_calibration(cells)
    assert (got.false_positive_rate, got.passed, got.blocked_host_stall) == (0.5, False, 1)
    assert "the instrument FAILED; 1 cell run(s) blocked host_stall" in got.sentence


def test_without_an_interval_there_is_no_verdict() -> None:
    got = aa_calibration([cell("c0", [], "host_stall", "host_stall")])
    assert got.passed is None and got.false_positive_rate is None
    assert got.blocked_host_stall == 2


def test_the_shipped_aa_matrix_runs_one_recipe_and_a_differing_arm_is_refused(
    tmp_path: Path,
) -> None:
    matrix = load_matrix(AA_MATRIX)
    assert matrix.campaign.aa
    assert matrix.arms[0].simulator == matrix.arms[1].simulator
    text = AA_MATRIX.read_text()
    last = text.rindex("time_scale = 20.0")
    other = tmp_path / "other.toml"
    other.write_text(text[:last] + "time_scale = 10.0" + text[last + len("time_scale = 20.0") :])
    with pytest.raises(FaceoffError, match="arm 'exl3-b' differs from 'exl3-a' in simulator"):
        load_matrix(other)
