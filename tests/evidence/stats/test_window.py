"""Cell-window figures with a time-block bootstrap interval (evidence.stats.window)."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.stats.window import WindowRequest, window_blocks, window_ratio

NS = 1_000_000_000


def closed_loop(seconds: np.ndarray, tokens: float = 100.0) -> list[WindowRequest]:
    """One stream: each request sent when the last ended, ``tokens`` tokens each."""
    ends = np.cumsum(seconds) * NS
    starts = np.concatenate([[0.0], ends[:-1]])
    return [WindowRequest(int(s), int(e), tokens) for s, e in zip(starts, ends, strict=True)]


def test_the_blocks_split_the_window_and_its_amount_exactly() -> None:
    requests = closed_loop(np.full(64, 0.5))
    blocks = window_blocks(requests, 1)
    assert blocks is not None
    assert blocks.spans.sum() == pytest.approx(32.0) and blocks.amounts.sum() == 6400
    assert blocks.rate == pytest.approx(200.0) and len(blocks.amounts) == 16


def test_an_aa_ratio_covers_one_and_a_faster_candidate_is_told_apart() -> None:
    rng = np.random.default_rng(3)
    misses = 0
    for seed in range(200):
        inc = window_blocks(closed_loop(rng.lognormal(0, 0.3, 64)), 1)
        cand = window_blocks(closed_loop(rng.lognormal(0, 0.3, 64)), 1)
        assert inc is not None and cand is not None
        found = window_ratio(inc, cand, seed=seed, resamples=500)
        assert found is not None
        misses += found.low > 1 or found.high < 1
    assert misses <= 200 * 0.1  # 5 % expected; a loose ceiling for 200 draws
    slow = window_blocks(closed_loop(rng.lognormal(0, 0.1, 64)), 1)
    fast = window_blocks(closed_loop(rng.lognormal(np.log(1 / 1.2), 0.1, 64)), 1)
    assert slow is not None and fast is not None
    found = window_ratio(slow, fast, seed=1)
    assert found is not None and 1.1 < found.low < 1.2 < found.high
    assert (found.n_incumbent, found.blocks_incumbent) == (64, 16)


def test_a_share_counts_requests_not_seconds() -> None:
    good = [WindowRequest(i * NS, (i + 1) * NS, float(i % 2)) for i in range(40)]
    blocks = window_blocks(good, 1, per_request=True)
    assert blocks is not None and blocks.rate == pytest.approx(0.5)
    assert window_blocks([], 1) is None
