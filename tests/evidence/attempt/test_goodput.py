"""Goodput and SLO attainment, on requests fed through the client's own parser."""

from __future__ import annotations

import pytest

from evidence.attempt.goodput import goodput
from faceoff.formats.attempt.journal import Phase, RequestOutcome, Status
from matrix.slo import Slo
from tests.workload.builders import DONE, chunk, failed, planned, replay, usage_chunk


def answered(send_ms: int, first_ms: int, last_ms: int, tokens: int = 3) -> RequestOutcome:
    """An ok request sent at send_ms: first content at first_ms, last token at last_ms."""
    return replay(
        [
            (first_ms, chunk("a")),
            (last_ms, chunk("b", finish_reason="stop")),
            (last_ms, usage_chunk(10, tokens)),
            (last_ms, DONE),
        ],
        send_ms=send_ms,
    )


def test_goodput_counts_only_requests_meeting_every_bound_over_the_cell_window() -> None:
    outcomes = [
        answered(0, 100, 400, tokens=4),  # TTFT 100 ms, E2E 400 ms: good
        answered(0, 300, 500),  # TTFT 300 ms: misses the TTFT bound
        answered(1000, 1100, 2000, tokens=6),  # TTFT 100 ms, E2E 1 s: good; the window ends here
        failed(Status.HTTP_ERROR),  # errored: never good
    ]
    found = goodput(outcomes, Slo(ttft_ms=200, e2e_ms=1500, attainment=0.5))
    assert (found.scored, found.good) == (4, 2)
    assert found.window_s == pytest.approx(2.0)
    assert found.requests_per_s == pytest.approx(2 / 2.0)
    assert found.output_tps == pytest.approx((4 + 6) / 2.0)
    assert found.attainment == pytest.approx(0.5)
    assert found.within_slo is True


def test_a_cell_below_its_attainment_target_is_outside_slo() -> None:
    outcomes = [answered(0, 100, 400), answered(0, 300, 500), answered(0, 350, 600)]
    found = goodput(outcomes, Slo(ttft_ms=200, attainment=0.5))
    assert found.attainment == pytest.approx(1 / 3)
    assert found.within_slo is False


def test_warmups_never_count_toward_goodput() -> None:
    warm = replay(
        [(100, chunk("a", finish_reason="stop")), (100, usage_chunk(10, 1)), (100, DONE)],
        request=planned(phase=Phase.WARMUP),
    )
    found = goodput([warm, answered(0, 50, 300)], Slo(ttft_ms=200))
    assert (found.scored, found.good) == (1, 1)


def test_a_tpot_bound_is_missed_by_a_request_without_a_token_interval() -> None:
    one_token = replay(
        [(50, chunk("a", finish_reason="stop")), (50, usage_chunk(10, 1)), (50, DONE)]
    )
    found = goodput([one_token], Slo(tpot_ms=50))
    assert (found.good, found.within_slo) == (0, False)
    assert found.requests_per_s == 0


def test_no_scored_request_leaves_attainment_and_rates_undefined() -> None:
    found = goodput([], Slo(ttft_ms=200))
    assert found.attainment is None and found.within_slo is None
    assert found.requests_per_s is None and found.output_tps is None
