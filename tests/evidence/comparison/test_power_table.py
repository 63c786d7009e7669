"""Power at validate: the warning names an underpowered cell and not a well-powered one, and
the requests it asks for, when used, decide the planted difference in most seeds."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from evidence.comparison.power_table import planned_variance, power_table, wanted_variances
from evidence.stats.bootstrap import Sample, median_ratio, time_blocks
from evidence.stats.known_variance import KnownVariance, default_variance, learned, per_request
from evidence.stats.sequential import standing
from matrix.model import Matrix
from matrix.toml.reader import load_matrix
from tests.foundation.test_matrix import MINIMAL, write

SIGMA = 0.2  # log-normal spread of one request's TTFT
RULE = """
[[cells]]
kind = "natural"
input_tokens = 2048
concurrency = 1
requests = {requests}

[rule]
[[rule.criteria]]
metric = "ttft_s"
non_inferiority = 0.05
"""


def matrix_of(tmp_path: Path, requests: int) -> Matrix:
    return load_matrix(write(tmp_path, MINIMAL.replace("requests = 2", "requests = 1000")
                             + RULE.format(requests=requests)))  # fmt: skip


def sample(rng: random.Random, n: int, scale: float) -> Sample:
    values = tuple(scale * math.exp(rng.gauss(0, SIGMA)) for _ in range(n))
    return Sample("natural/2048/c1", values, time_blocks(list(range(n)), 1))


def calibrated(seed: int, nights: int = 6) -> KnownVariance:
    """The variance six A/A nights of 400 requests per arm teach (each night one interval)."""
    rng = random.Random(seed)
    observed = []
    for night in range(nights):
        found = median_ratio(sample(rng, 400, 1.0), sample(rng, 400, 1.0), seed=seed + night)
        assert found is not None
        blocks = min(found.blocks_incumbent, found.blocks_candidate)
        observed.append(per_request(found.ratio, found.low, found.high, 400, blocks))
    return learned("ttft_s", "p50", observed=observed, source="aa", campaigns=["cal-aa"])


def test_the_warning_names_an_underpowered_cell_and_not_a_well_powered_one(
    tmp_path: Path,
) -> None:
    matrix = matrix_of(tmp_path, requests=8)
    known = calibrated(1)
    table = power_table(matrix, dict.fromkeys(wanted_variances(matrix), known))
    rows = {row.cell: row for row in table.rows}
    small, large = rows["natural-2048-c1"], rows["natural-1024-c1"]
    assert small.warning is not None and not small.decidable
    assert small.warning.startswith("natural-2048-c1 TTFT p50: 8 requests give ±")
    assert f"≈ {small.needed:,} requests" in small.warning
    assert large.decidable and large.warning is None and large.needed is not None
    assert small.needed == large.needed  # the same workload needs the same requests
    assert small.variance is not None and small.variance.source == "aa"


def test_the_requests_it_asks_for_decide_the_planted_difference_in_most_seeds(
    tmp_path: Path,
) -> None:
    """Planted: the candidate as good as the incumbent; the 5 % margin is met when the
    interval lies wholly below 1.05. With the table's n, in at least 80 % of 100 seeds."""
    known = calibrated(2)
    table = power_table(matrix_of(tmp_path, 8), {("natural-2048-c1", "ttft_s", "p50"): known})
    needed = next(r.needed for r in table.rows if r.cell == "natural-2048-c1")
    assert needed is not None and 20 < needed < 2000
    met = 0
    for seed in range(100):
        rng = random.Random(1000 + seed)
        found = median_ratio(sample(rng, needed, 1.0), sample(rng, needed, 1.0), seed=seed)
        assert found is not None
        met += standing(found.low, found.high, 1.05, higher_is_better=False) == "met"
    assert met / 100 >= 0.8


def test_a_plan_below_the_calibrated_requests_is_told_its_figures_only_describe(
    tmp_path: Path,
) -> None:
    """The card will call a cell of 8 requests descriptive whatever its variance: the power
    line says so too, and asks for the calibrated n."""
    matrix = matrix_of(tmp_path, requests=8)
    tiny = KnownVariance(metric="ttft_s", statistic="p50", log_ratio=1e-6, arm=5e-7,
                         source="aa", nights=3, detail="three quiet nights")  # fmt: skip
    table = power_table(matrix, {("natural-2048-c1", "ttft_s", "p50"): tiny})
    rows = {row.cell: row for row in table.rows}
    small = rows["natural-2048-c1"]
    assert not small.decidable and small.warning is not None
    assert "8 requests per arm are fewer than the 29 its interval is calibrated at" in small.warning
    assert small.needed is not None and small.needed >= 29


def test_a_learned_variance_is_planned_at_its_upper_confidence_limit() -> None:
    """One 64-request night (16 blocks, df 15) is planned ≈1.45× larger, three ≈1.22×, many
    nights barely larger; the default is used as it is."""

    def night(df: int | None) -> KnownVariance:
        return KnownVariance(metric="ttft_s", statistic="p50", log_ratio=0.04, arm=0.02,
                             source="aa", nights=1, df=df, detail="")  # fmt: skip

    factors = [planned_variance(night(df)) / 0.04 for df in (15, 45, 1500)]
    assert factors == sorted(factors, reverse=True)
    assert factors[0] == pytest.approx(1.45, abs=0.02) and factors[1] == pytest.approx(
        1.22, abs=0.02
    )
    assert 1.0 < factors[2] < 1.05
    assert planned_variance(night(None)) == pytest.approx(0.048)  # no df: the older 1.2×
    default = default_variance("ttft_s", "p50")
    assert planned_variance(default) == default.log_ratio


def test_a_spread_between_nights_is_planned_per_request_and_one_pass_is_told_of_passes(
    tmp_path: Path,
) -> None:
    """Three 64-request nights whose windows differ (τ² 0.002): the plan adds 64·τ² to s²,
    and a single-pass cell's row names the passes that average it out."""
    matrix = matrix_of(tmp_path, requests=400)
    spread, agreed = (
        learned(
            "ttft_s",
            "p50",
            observed=[0.1] * 3,
            source="aa",
            campaigns=["aa"],
            df=45,
            requests=192,
            between=between,
        )
        for between in (0.002, 0.0)
    )
    assert planned_variance(spread) == pytest.approx(planned_variance(agreed) + 64 * 0.002)
    assert "τ = 0.045" in spread.detail and "no variance between" in agreed.detail
    key = ("natural-2048-c1", "ttft_s", "p50")
    told = {r.cell: r for r in power_table(matrix, {key: spread}).rows}["natural-2048-c1"]
    quiet = {r.cell: r for r in power_table(matrix, {key: agreed}).rows}["natural-2048-c1"]
    assert told.warning is not None and "passes of" in told.warning
    assert "arm order alternating" in told.warning
    assert quiet.warning is None or "passes of" not in quiet.warning
