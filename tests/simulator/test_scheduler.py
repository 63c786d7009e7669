"""The step scheduler on a virtual clock: deterministic, so exact claims can be made.

The live server runs the same scheduler and cost model; test_timing checks over HTTP
that it keeps this schedule.
"""

from __future__ import annotations

import itertools
import statistics

import pytest

from simulator.kvcache import BlockPool, BlockTable, block_hashes
from simulator.profile import Profile, load_profile, with_overrides
from simulator.virtual import Job, Run, closed_loop, open_loop


def tiny(*assignments: str) -> Profile:
    return with_overrides(load_profile("tiny"), list(assignments), where="test")


def test_a_lone_request_takes_prefill_chunks_then_one_decode_step_per_token() -> None:
    profile = tiny()
    run = closed_loop(profile, [Job(prompt_tokens=4096, output_tokens=101)], 1)
    timing = run.timings[0]
    assert len(timing.emissions) == 101
    # eight 512-token chunks, each at the curve's rate (50K tok/s falling to 40K at 8K)
    # read at the chunk's middle
    expected = sum(512 / (50_000 - 10_000 * (i * 512 + 256) / 8192) for i in range(8))
    assert timing.ttfo == pytest.approx(expected, rel=1e-9)
    assert timing.decode_rate == pytest.approx(200.0, rel=0.01)  # 5 ms steps at batch 1


def test_max_num_seqs_makes_the_rest_wait() -> None:
    run = closed_loop(tiny("engine.max_num_seqs=2"), [Job(200, 50)] * 4, 4)
    assert run.peak_running == 2 and run.peak_waiting == 2
    first_end = min(t.e2e for t in run.timings[:2])  # all four were sent at 0
    assert all(t.ttfo >= first_end for t in run.timings[2:])


def test_a_full_kv_pool_preempts_and_every_request_still_finishes() -> None:
    jobs = [Job(7000, 1000)] * 5  # 5 × 8,000 tokens > the 32,768-token pool
    run = closed_loop(tiny(), jobs, 5)
    assert run.preemptions > 0 and run.peak_kv_usage > 0.95
    assert all(t.tokens == 1000 for t in run.timings)


def test_without_preemption_requests_queue_until_their_whole_budget_fits() -> None:
    jobs = [Job(7000, 1000)] * 5
    run = closed_loop(tiny("engine.preemption=false"), jobs, 5)
    assert run.preemptions == 0 and run.peak_waiting >= 1 and run.peak_running == 4
    assert all(t.tokens == 1000 for t in run.timings)


def test_a_repeated_prefix_skips_prefill_unless_the_nonce_comes_first() -> None:
    shared = [Job(4096, 10, shared_prefix=4000)] * 2
    run = closed_loop(tiny(), shared, 1)
    assert run.prefix_hits == 4000 // 16 * 16
    first, second = (t.ttfo for t in run.timings)
    assert second < first / 10
    nonce_first = closed_loop(tiny(), [Job(4096, 10)] * 2, 1)
    assert nonce_first.prefix_hits == 0


def test_prefix_caching_off_never_hits() -> None:
    run = closed_loop(tiny("engine.enable_prefix_caching=false"), [Job(4096, 10, 4000)] * 2, 1)
    assert run.prefix_hits == 0


def head_of_line(profile: Profile) -> Run:
    """A decoding stream, then a cold 8K prefill, then a short request behind it."""
    return open_loop(
        profile,
        [(0.0, Job(64, 400)), (0.3, Job(8000, 4)), (0.31, Job(64, 4))],
    )


def gaps_during(run: Run, start: float, end: float) -> list[float]:
    times = run.timings[0].emissions
    return [b - a for a, b in itertools.pairwise(times) if start <= a and b <= end]


def test_a_cold_prefill_stalls_decoding_and_the_threshold_removes_the_stall() -> None:
    plain = head_of_line(tiny())
    capped = head_of_line(tiny("engine.long_prefill_token_threshold=64"))
    long_done = 0.3 + plain.timings[1].ttfo
    stalled = max(gaps_during(plain, 0.3, long_done))
    assert stalled > 2 * 0.005  # a 512-token chunk rides along with every decode step
    spared = max(gaps_during(capped, 0.3, 0.3 + capped.timings[1].ttfo))
    assert spared < stalled / 2
    # the short request no longer waits for the whole long prefill
    short_plain, short_capped = plain.timings[2].ttfo, capped.timings[2].ttfo
    assert 0.31 + short_plain >= long_done - 1e-9 and short_capped < short_plain / 3


def test_speculative_decoding_is_faster_on_structured_text() -> None:
    nvfp4 = load_profile("nvfp4-r2")
    prose = closed_loop(nvfp4, [Job(1000, 300, text_kind="prose")], 1).timings[0]
    structured = closed_loop(nvfp4, [Job(1000, 300, text_kind="structured")], 1).timings[0]
    ratio = structured.decode_rate / prose.decode_rate
    assert ratio == pytest.approx(
        (1 + 0.85 + 0.85**2 + 0.85**3) / (1 + 0.62 + 0.62**2 + 0.62**3), rel=0.02
    )


def test_the_first_request_after_start_pays_the_jit_warmup() -> None:
    nvfp4 = load_profile("nvfp4-r2")
    cold = closed_loop(nvfp4, [Job(8192, 2)], 1, warm=False).timings[0].ttfo
    warm = closed_loop(nvfp4, [Job(8192, 2)], 1).timings[0].ttfo
    assert cold - warm == pytest.approx(nvfp4.timing.jit_warmup_s)


@pytest.mark.parametrize(
    ("name", "prefill", "decode"), [("exl3-r11", 5011, 77.38), ("nvfp4-r2", 9002, 201.49)]
)
def test_calibrated_profiles_reproduce_the_published_c1_cell(name, prefill, decode) -> None:
    run = closed_loop(load_profile(name), [Job(31_600, 181, 115)] * 3, 1)
    first_output = statistics.median(t.ttfo for t in run.timings)
    assert 31_600 / first_output == pytest.approx(prefill, rel=0.005)
    assert statistics.median(t.decode_rate for t in run.timings) == pytest.approx(decode, rel=0.01)


def test_capacity_edge_c4_has_the_published_shape() -> None:
    jobs = [Job(252_300, 181, 115)] * 4
    exl3 = closed_loop(load_profile("exl3-r11"), jobs, 4)
    nvfp4 = closed_loop(load_profile("nvfp4-r2"), jobs, 4)

    def ttft(run: Run) -> float:
        return statistics.median(t.ttft for t in run.timings)

    def aggregate(run: Run) -> float:
        return sum(t.tokens for t in run.timings) / run.elapsed

    assert ttft(exl3) > 1.8 * ttft(nvfp4)
    assert aggregate(nvfp4) > 1.5 * aggregate(exl3)
    assert exl3.peak_kv_usage > nvfp4.peak_kv_usage and exl3.peak_running == 4
    assert exl3.preemptions == nvfp4.preemptions == 0


def test_block_pool_shares_cached_blocks_and_evicts_the_tail_first() -> None:
    pool = BlockPool(num_blocks=4, block_size=2, prefix_caching=True)
    first, second = BlockTable(), BlockTable()
    hashes = block_hashes([1, 2, 3, 4, 5], 2)
    assert len(hashes) == 2  # the partial last block is never shared
    assert pool.grow(first, 4)
    for block in hashes:
        pool.promote(first, block)
    pool.release(first)
    assert pool.available == 4 and pool.cached_prefix(hashes) == 2
    pool.hold_cached(second, hashes[:1])
    assert pool.grow(second, 8)  # needs 3 more: evicts the tail block, keeps the held head
    assert pool.cached_prefix(hashes) == 1 and pool.available == 0
