"""The attempt's energy figures: joules over the scored window per output token and per good
request. Pure."""

from __future__ import annotations

import pytest

from evidence.attempt.energy import energy_figures
from tests.collectors.gpu.test_energy import S, reading, sample, steady


def test_energy_per_token_is_the_counter_delta_over_the_output_tokens() -> None:
    samples = steady(400, [0.0, 2.0, 4.0, 6.0], simulated=True)
    figures = energy_figures(samples, (1 * S, 5 * S), output_tokens=800, good=(3, 600))
    assert figures.method == "counter" and figures.simulated and figures.gpu.exact
    assert figures.gpu.joules == pytest.approx(1_600.0)  # 400 W for 4 s
    assert figures.energy_per_token_j == pytest.approx(2.0)
    assert figures.output_tokens_per_j == pytest.approx(0.5)
    assert figures.goodput_per_joule == pytest.approx(3 / 1_600)
    assert figures.goodput_tokens_per_j == pytest.approx(600 / 1_600)


def test_energy_without_a_counter_is_integrated_and_said_so() -> None:
    samples = [sample(i, t, reading(0, None, 300.0), reading(1, None, 100.0))
               for i, t in enumerate([0.0, 2.0, 4.0])]  # fmt: skip
    figures = energy_figures(samples, (0, 4 * S), output_tokens=100, good=None)
    assert figures.method == "integrated_power" and not figures.gpu.exact
    assert figures.gpu.joules == pytest.approx(1_600.0)  # (300 + 100) W for 4 s, both GPUs
    assert figures.energy_per_token_j == pytest.approx(16.0)
    assert figures.goodput_per_joule is None and figures.goodput_tokens_per_j is None
    mixed = [sample(i, t, reading(0, 1_000 + 300 * t, 300.0), reading(1, None, 100.0))
             for i, t in enumerate([0.0, 2.0, 4.0])]  # fmt: skip
    assert energy_figures(mixed, (0, 4 * S), 100, None).method == "mixed"


def test_no_gpu_energy_gives_no_figure_per_joule() -> None:
    unreadable = [sample(i, t, reading(0, None, None)) for i, t in enumerate([0.0, 2.0])]
    figures = energy_figures(unreadable, (0, 2 * S), output_tokens=10, good=(1, 10))
    assert figures.gpu.joules is None and figures.method is None
    assert figures.energy_per_token_j is None and figures.goodput_per_joule is None
    none_out = energy_figures(steady(100, [0.0, 2.0]), (0, 2 * S), output_tokens=0, good=None)
    assert none_out.energy_per_token_j is None and none_out.output_tokens_per_j == 0.0
