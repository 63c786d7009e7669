"""Token timing over real HTTP: the live server keeps the profile's schedule.

Claims are ratios or 5 % bands measured over many steps, so a noisy shared machine
does not decide them; the exact arithmetic is in test_scheduler.
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import uuid

import aiohttp
import pytest

from simulator.launch import SimServer, running
from simulator.profile import load_profile
from simulator.virtual import Job, closed_loop
from tests.simulator.client import Streamed, chat, get, stream

NO_STARTUP = ("--set", "timing.startup_s=0")


def words(count: int) -> str:
    """A prompt body of ``count`` tokens, nonce first so nothing hits the prefix cache."""
    return uuid.uuid4().hex[:8].upper() + " abc" * count


async def test_c1_token_timing_matches_the_profile(session) -> None:
    # time scale 0.2: 25 ms decode steps and a ~420 ms prefill, so that the client's own
    # request encoding and the server's tokenization stay well inside 5 %
    scale = 0.2
    body = chat(words(4000), max_tokens=80, ignore_eos=True, stream_options={"include_usage": True})
    with running("tiny", time_scale=scale, args=NO_STARTUP) as sim:
        result = await stream(session, sim.url + "/v1/chat/completions", body)
    usage, times = result.usage, result.output_times()
    assert usage["completion_tokens"] == len(times) == 80
    decode = (len(times) - 1) / ((times[-1] - times[0]) / 1e9) / scale
    assert decode == pytest.approx(200.0, rel=0.05)  # tiny: 5 ms decode steps at batch 1
    predicted = closed_loop(load_profile("tiny"), [Job(usage["prompt_tokens"], 80)], 1)
    first_output = (times[0] - result.sent_ns) / 1e9 * scale
    assert first_output == pytest.approx(predicted.timings[0].ttfo, rel=0.05)


async def test_calibrated_profile_over_http_at_time_scale_5(session) -> None:
    prompt = chat(words(31_560), seed=7, stream_options={"include_usage": True})
    with running("exl3-r11", time_scale=5, args=NO_STARTUP) as sim:
        url = sim.url + "/v1/chat/completions"
        await stream(session, url, chat("warm-up", max_tokens=2))  # pays the JIT warmup
        result = await stream(session, url, prompt)
    times, usage = result.output_times(), result.usage
    first_output = (times[0] - result.sent_ns) / 1e9 * 5
    decode = (usage["completion_tokens"] - 1) / ((times[-1] - times[0]) / 1e9) / 5
    assert usage["prompt_tokens"] / first_output == pytest.approx(5011, rel=0.05)
    assert decode == pytest.approx(77.38, rel=0.05)


def gaps_between(result: Streamed, start_ns: int, end_ns: int) -> list[float]:
    times = result.output_times()
    return [(b - a) / 1e9 for a, b in itertools.pairwise(times) if start_ns <= a and b <= end_ns]


async def head_of_line(server: SimServer, session: aiohttp.ClientSession) -> tuple[float, float]:
    """(median decode gap while a cold 7K prefill runs, the short request's TTFT behind it)."""
    url = server.url + "/v1/chat/completions"
    decoder = asyncio.create_task(stream(session, url, chat("go", max_tokens=250, ignore_eos=True)))
    await asyncio.sleep(0.3)
    long = asyncio.create_task(stream(session, url, chat(words(7000), max_tokens=1)))
    await asyncio.sleep(0.01)
    short = await stream(session, url, chat("short", max_tokens=1))
    long_result, decode_result = await long, await decoder
    window = gaps_between(decode_result, long_result.sent_ns, long_result.output_times()[0])
    return statistics.median(window), (short.output_times()[0] - short.sent_ns) / 1e9


async def test_a_cold_prefill_slows_decoding_and_the_threshold_spares_it(session) -> None:
    # time scale 0.5 doubles every step so that the effect stands well above timer noise
    with running("tiny", time_scale=0.5, args=NO_STARTUP) as plain:
        stalled_gap, stalled_short = await head_of_line(plain, session)
    threshold = [*NO_STARTUP, "--set", "engine.long_prefill_token_threshold=64"]
    with running("tiny", time_scale=0.5, args=threshold) as capped:
        spared_gap, spared_short = await head_of_line(capped, session)
    solo_gap = 2 * 0.005
    assert stalled_gap > 2.5 * solo_gap  # 512-token chunks ride along with every decode step
    assert spared_gap < stalled_gap / 1.8
    assert spared_short < stalled_short / 3


async def peak_waiting(url: str, until: asyncio.Future) -> int:
    peak = 0
    async with aiohttp.ClientSession() as scraper:
        while not until.done():
            _, text = await get(scraper, url + "/metrics")
            line = next(x for x in text.splitlines() if x.startswith("vllm:num_requests_waiting{"))
            peak = max(peak, int(float(line.rsplit(" ", 1)[1])))
            await asyncio.sleep(0.01)
    return peak


async def run_concurrently(url: str, session, bodies: list[dict]) -> tuple[list[Streamed], int]:
    requests = asyncio.gather(*(stream(session, url + "/v1/chat/completions", b) for b in bodies))
    waiting = asyncio.create_task(peak_waiting(url, requests))
    return await requests, await waiting


async def test_requests_queue_when_max_num_seqs_is_exhausted(session) -> None:
    with running("tiny", args=[*NO_STARTUP, "--set", "engine.max_num_seqs=2"]) as sim:
        bodies = [chat(words(50), max_tokens=60, ignore_eos=True) for _ in range(4)]
        results, waiting = await run_concurrently(sim.url, session, bodies)
    assert waiting >= 1
    ends = sorted(r.output_times()[-1] for r in results)
    firsts = sorted(r.output_times()[0] for r in results)
    assert firsts[2] >= ends[0]  # the third request starts only when a slot frees


async def test_requests_queue_when_the_kv_pool_is_exhausted(session) -> None:
    # no preemption: a request is admitted only when prompt + max_tokens fit the pool
    # 5 × (7,000 + 1,000) tokens: four fit the 32,768-token pool, the fifth waits
    args = [*NO_STARTUP, "--set", "engine.preemption=false"]
    with running("tiny", time_scale=8, args=args) as sim:
        bodies = [chat(words(7000), max_tokens=1000, ignore_eos=True) for _ in range(5)]
        results, waiting = await run_concurrently(sim.url, session, bodies)
    assert waiting >= 1 and all(r.status == 200 for r in results)


async def test_turn_two_of_a_session_reuses_the_cached_prefix(tiny: SimServer, session) -> None:
    turn_one = [{"role": "user", "content": words(4000)}]
    turn_two = [
        *turn_one,
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "more"},
    ]
    url = tiny.url + "/v1/chat/completions"

    async def hits() -> float:
        text = (await get(session, tiny.url + "/metrics"))[1]
        line = next(x for x in text.splitlines() if x.startswith("vllm:prefix_cache_hits_total{"))
        return float(line.rsplit(" ", 1)[1])

    before = await hits()
    first = await stream(session, url, {"messages": turn_one, "max_tokens": 1})
    second = await stream(session, url, {"messages": turn_two, "max_tokens": 1})
    ttfo = [(r.output_times()[0] - r.sent_ns) / 1e9 for r in (first, second)]
    assert await hits() - before >= 4000 // 16 * 16 - 16
    assert ttfo[1] < ttfo[0] / 3
