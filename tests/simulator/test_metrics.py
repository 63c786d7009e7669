"""``/metrics`` over HTTP: parsed with prometheus_client, compared with a real vLLM scrape,
and reconciled with what the clients received."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from simulator.launch import SimServer, running
from tests.simulator.client import chat, get, post, stream
from tests.simulator.conftest import REFERENCE


def families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(fams: dict[str, Any], family: str, sample: str | None = None, **labels: str) -> float:
    total = 0.0
    for s in fams[family].samples:
        if s.name == (sample or family) and all(s.labels.get(k) == v for k, v in labels.items()):
            total += s.value
    return total


def label_names(family: Any) -> set[str]:
    return {name for s in family.samples for name in s.labels} - {"le"}


def bucket_edges(family: Any) -> list[str]:
    return sorted({s.labels["le"] for s in family.samples if "le" in s.labels}, key=float)


async def scrape(server: SimServer, session) -> dict[str, Any]:
    status, text = await get(session, server.url + "/metrics")
    assert status == 200
    return families(text)


async def test_every_vllm_family_matches_the_reference_scrape(tiny: SimServer, session) -> None:
    ours = await scrape(tiny, session)
    theirs = families((REFERENCE / "metrics-sample.txt").read_text())
    for name, family in theirs.items():
        if not name.startswith("vllm:"):
            continue
        assert name in ours, f"{name} missing"
        assert ours[name].type == family.type, name
        if name == "vllm:cache_config_info":
            assert label_names(ours[name]) == label_names(family)
            continue
        expected = label_names(family) - {"model_name"} | {"model_name"}
        assert label_names(ours[name]) == expected, name
        # the reference server had the same max_model_len (8192), so token buckets match too
        assert bucket_edges(ours[name]) == bucket_edges(family), name


async def test_cache_config_info_describes_the_kv_pool(tiny: SimServer, session) -> None:
    info = (await scrape(tiny, session))["vllm:cache_config_info"].samples[0].labels
    assert (info["block_size"], info["num_gpu_blocks"], info["kv_cache_size_tokens"]) == (
        "16",
        "2048",
        "32768",
    )
    assert info["engine"] == "0"


async def test_counters_reconcile_exactly_with_client_usage(session) -> None:
    with running("tiny", time_scale=4) as sim:
        chat_url, completion_url = sim.url + "/v1/chat/completions", sim.url + "/v1/completions"
        usage_opts = {"stream_options": {"include_usage": True}}
        streamed = [
            stream(session, chat_url, chat(f"question {i} " * (i + 1), seed=i, **usage_opts))
            for i in range(6)
        ]
        streamed.append(stream(session, completion_url, {"prompt": [5, 6, 7], **usage_opts}))
        results = await asyncio.gather(*streamed)
        usages = [r.usage for r in results]
        for body in (chat("whole", max_tokens=9), {"prompt": "text prompt", "max_tokens": 5}):
            url = chat_url if "messages" in body else completion_url
            usages.append((await post(session, url, body))[1]["usage"])
        fams = await scrape(sim, session)
    prompt = sum(u["prompt_tokens"] for u in usages)
    completion = sum(u["completion_tokens"] for u in usages)
    assert value(fams, "vllm:prompt_tokens", "vllm:prompt_tokens_total") == prompt
    assert value(fams, "vllm:generation_tokens", "vllm:generation_tokens_total") == completion
    assert value(fams, "vllm:request_success", "vllm:request_success_total") == len(usages)
    assert value(fams, "vllm:request_prompt_tokens", "vllm:request_prompt_tokens_sum") == prompt
    for histogram in (
        "time_to_first_token_seconds",
        "e2e_request_latency_seconds",
        "request_prefill_time_seconds",
        "request_queue_time_seconds",
    ):
        count = value(fams, f"vllm:{histogram}", f"vllm:{histogram}_count")
        assert count == len(usages), histogram


async def test_engine_times_agree_with_the_client(session) -> None:
    with running("tiny", time_scale=0.5) as sim:
        result = await stream(session, sim.url + "/v1/chat/completions", chat("hi", max_tokens=40))
        fams = await scrape(sim, session)
    client_ttft = (result.output_times()[0] - result.sent_ns) / 1e9
    engine_ttft = value(
        fams, "vllm:time_to_first_token_seconds", "vllm:time_to_first_token_seconds_sum"
    )
    assert 0 < client_ttft - engine_ttft < 0.02  # only HTTP and tokenization in between
    decode = value(fams, "vllm:request_decode_time_seconds", "vllm:request_decode_time_seconds_sum")
    times = result.output_times()
    assert abs(decode - (times[-1] - times[0]) / 1e9) < 0.02


async def test_load_gauges_follow_a_running_request(tiny: SimServer, session) -> None:
    request = asyncio.create_task(
        stream(
            session, tiny.url + "/v1/chat/completions", chat("x", max_tokens=60, ignore_eos=True)
        )
    )
    await asyncio.sleep(0.1)
    busy = await scrape(tiny, session)
    await request
    idle = await scrape(tiny, session)
    assert value(busy, "vllm:num_requests_running") == 1
    assert value(busy, "vllm:kv_cache_usage_perc") > 0
    assert value(idle, "vllm:num_requests_running") == 0


async def test_legacy_names_for_the_alias_table(session) -> None:
    with running("tiny", args=["--legacy-names"]) as sim:
        await post(session, sim.url + "/v1/chat/completions", chat("hi", max_tokens=3))
        _, text = await get(session, sim.url + "/metrics")
    fams = families(text)
    for old in (
        "vllm:gpu_cache_usage_perc",
        "vllm:gpu_prefix_cache_queries",
        "vllm:gpu_prefix_cache_hits",
        "vllm:time_per_output_token_seconds",
    ):
        assert old in fams, old
    assert "vllm:kv_cache_usage_perc" not in fams and "vllm:prefix_cache_hits" not in fams
    # counters the pre-_total way: the sample carries the family's own name, no _created
    assert "\nvllm:prompt_tokens{" in text and "vllm:prompt_tokens_total" not in text
    assert "vllm:prompt_tokens_created" not in text
    # prometheus_client's parser reads the bare sample back as vllm:prompt_tokens_total
    assert fams["vllm:prompt_tokens"].type == "counter"
    assert value(fams, "vllm:prompt_tokens", "vllm:prompt_tokens_total") > 0


async def test_a_client_that_goes_away_is_counted_as_aborted(session) -> None:
    with running("tiny") as sim:
        body = chat("x", max_tokens=400, ignore_eos=True, stream=True)
        async with session.post(sim.url + "/v1/chat/completions", json=body) as response:
            await response.content.readline()  # the first event, then hang up mid-stream
        await asyncio.sleep(0.3)
        fams = await scrape(sim, session)
    aborted = value(
        fams, "vllm:request_success", "vllm:request_success_total", finished_reason="abort"
    )
    assert aborted == 1
    assert value(fams, "vllm:num_requests_running") == 0
    assert value(fams, "vllm:kv_cache_usage_perc") == 0
