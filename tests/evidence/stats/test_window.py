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
    # 16 blocks of ⌈64^⅓⌉, fewer where a chance run of slow requests asks for longer ones
    assert found.n_incumbent == 64 and 11 <= found.blocks_incumbent <= 16


def test_a_stall_episode_stays_in_one_block_and_widens_the_interval() -> None:
    rng = np.random.default_rng(8)
    steady = rng.lognormal(0, 0.3, 64)
    stalled = steady.copy()
    stalled[30:38] *= 2.0  # one 8-request stall episode
    calm = window_blocks(closed_loop(steady), 1)
    episode = window_blocks(closed_loop(stalled), 1)
    assert calm is not None and episode is not None
    assert episode.dependence.length >= 8 and len(episode.amounts) <= 8
    other = window_blocks(closed_loop(rng.lognormal(0, 0.3, 64)), 1)
    assert other is not None
    quiet, wide = (window_ratio(side, other, seed=2, resamples=500) for side in (calm, episode))
    assert quiet is not None and wide is not None
    assert wide.high / wide.low > quiet.high / quiet.low


def test_a_share_counts_requests_not_seconds() -> None:
    good = [WindowRequest(i * NS, (i + 1) * NS, float(i % 2)) for i in range(40)]
    blocks = window_blocks(good, 1, per_request=True)
    assert blocks is not None and blocks.rate == pytest.approx(0.5)
    assert window_blocks([], 1) is None
