"""The attempt's tails: ITL from chunk times, a p99 claimed only from enough values. Pure."""

from __future__ import annotations

import random

import pytest

from evidence.attempt.tails import chunk_gaps, p99_floor, tail_of
from faceoff.formats.attempt.journal import RequestOutcome


def test_a_p99_is_claimed_only_from_the_floor_of_values_at_95_percent() -> None:
    floor = p99_floor(0.95)
    assert floor == 473  # MLPerf LoadGen's early-stopping floor
    shuffled = list(range(floor))
    random.Random(4).shuffle(shuffled)  # independent values in journal order
    short = tail_of([float(v) for v in shuffled if v < floor - 1])
    enough = tail_of([float(v) for v in shuffled])
    assert (short.p99_claimed, enough.p99_claimed) == (False, True)
    assert enough.p50 == pytest.approx((floor - 1) / 2) and enough.max == floor - 1
    assert enough.p99 == pytest.approx(0.99 * (floor - 1))


def test_a_p99_counts_independent_blocks_not_values() -> None:
    # Ten times the floor, but in runs of 40 alike values (a stall slows a run of requests):
    # about 120 independent blocks, too few for the order-statistic bound.
    draw = random.Random(5)
    runs = [draw.lognormvariate(0.0, 0.5) for _ in range(120)]
    clustered = [level * draw.uniform(0.99, 1.01) for level in runs for _ in range(40)]
    assert len(clustered) > 10 * p99_floor(0.95)
    assert not tail_of(clustered).p99_claimed
    independent_values = [draw.lognormvariate(0.0, 0.5) for _ in range(len(clustered))]
    assert tail_of(independent_values).p99_claimed
    empty = tail_of([])
    assert (empty.n, empty.p99, empty.p99_claimed) == (0, None, False)


def test_inter_token_latency_is_the_gap_between_consecutive_chunks() -> None:
    outcome = RequestOutcome.model_construct(chunk_offsets_us=[1_000, 1_500, 4_500, 4_600])
    assert chunk_gaps(outcome) == pytest.approx([0.0005, 0.003, 0.0001])
    assert chunk_gaps(RequestOutcome.model_construct(chunk_offsets_us=[7])) == []
