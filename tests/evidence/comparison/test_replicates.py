"""Between-replicate intervals: the t interval on log ratios, and how replicates expand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evidence.comparison.replicates import log_t_interval
from matrix.toml.reader import MatrixError, load_matrix
from tests.foundation.test_matrix import MINIMAL, write


def test_identical_replicate_ratios_give_a_zero_width_interval() -> None:
    assert log_t_interval([1.1, 1.1, 1.1]) == pytest.approx((1.1, 1.1, 1.1))


def test_the_interval_is_a_t_interval_on_log_ratios() -> None:
    ratios = [1.0, 1.2]
    logs = [math.log(r) for r in ratios]
    mean, sd = sum(logs) / 2, abs(logs[1] - logs[0]) / math.sqrt(2)
    half = 12.7062047 * sd / math.sqrt(2)  # t(0.975, 1 df): two replicates are honestly wide
    estimate, low, high = log_t_interval(ratios)
    assert estimate == pytest.approx(math.sqrt(1.2))
    assert (low, high) == pytest.approx((math.exp(mean - half), math.exp(mean + half)))
    assert low < 1 < high


def test_a_drift_between_windows_widens_the_interval() -> None:
    steady = log_t_interval([1.0, 1.01, 0.99, 1.0])
    drifting = log_t_interval([0.8, 1.25, 0.85, 1.2])
    assert drifting[2] - drifting[1] > 10 * (steady[2] - steady[1])


def test_replicates_expand_into_cells_that_share_one_prompt_vector(tmp_path: Path) -> None:
    matrix = load_matrix(write(tmp_path, MINIMAL + "replicates = 3\n"))
    assert [c.id for c in matrix.cells] == [
        "natural-1024-c1-r1",
        "natural-1024-c1-r2",
        "natural-1024-c1-r3",
    ]
    assert {c.prompt_id for c in matrix.cells} == {"natural-1024-c1"}
    assert [c.pass_index for c in matrix.cells] == [1, 2, 3]


def test_replicates_in_defaults_apply_to_every_cell(tmp_path: Path) -> None:
    text = MINIMAL.replace("[[cells]]", "[defaults]\nreplicates = 2\n\n[[cells]]", 1)
    assert len(load_matrix(write(tmp_path, text)).cells) == 2


@pytest.mark.parametrize("bad", ["0", "21", "1.5", "true", '"2"'])
def test_a_replicate_count_out_of_range_names_the_field(tmp_path: Path, bad: str) -> None:
    with pytest.raises(MatrixError, match=r"cells\[0\]\.replicates: must be a whole number"):
        load_matrix(write(tmp_path, MINIMAL + f"replicates = {bad}\n"))
