"""A night's window for the variance between nights: the A/A arms' log ratio of medians."""

from __future__ import annotations

import math

import pytest

from evidence.history.variance import night_window
from evidence.stats.heterogeneity import between_variance, detected
from evidence.stats.known_variance import per_request_of_arm
from faceoff.formats.night import Interval, NightMetric


def row(arm: str, role: str, p50: float, cell: str = "c1") -> NightMetric:
    return NightMetric.model_validate({
        "cell": cell, "arm": arm, "role": role, "metric": "ttft_s", "n": 64, "p50": p50,
        "p95": 2 * p50, "p50_interval": Interval(low=0.9 * p50, high=1.1 * p50),
        "p95_interval": None,
    })  # fmt: skip


def test_a_night_window_is_the_other_arms_log_ratio_with_the_ratio_intervals_error() -> None:
    incumbent = row("a", "incumbent", 0.2)
    found = night_window([incumbent, row("b", "candidate", 0.21)], incumbent, 16)
    assert found is not None
    assert found[0] == pytest.approx(math.log(1.05))
    assert found[1] ** 2 == pytest.approx(per_request_of_arm(0.18, 0.22, 1, 16))
    other_cell = row("b", "candidate", 0.21, cell="c2")
    assert night_window([incumbent, other_cell], incumbent, 16) is None  # no other arm here


def test_nights_whose_windows_differ_beyond_their_errors_carry_a_between_variance() -> None:
    windows = []
    for shift in (0.3, -0.3, 0.3):
        incumbent = row("a", "incumbent", 0.2)
        found = night_window([incumbent, row("b", "candidate", 0.2 * math.exp(shift))],
                             incumbent, 16)  # fmt: skip
        assert found is not None
        windows.append(found)
    assert detected(windows) and between_variance(windows) > 0.05
