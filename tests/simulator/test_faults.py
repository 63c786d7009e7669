"""Every injected fault, as a client (or a lane, or a collector) observes it."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import AbstractContextManager

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from simulator.launch import SimServer, running
from tests.simulator.client import chat, get, post

pytestmark = pytest.mark.timeout(120)


async def set_faults(server: SimServer, session, **changes) -> dict:
    status, body = await post(session, server.url + "/_sim/faults", changes)
    assert status == 200, body
    return body


async def completion(server: SimServer, session, content: str = "hi", **extra) -> tuple[int, dict]:
    return await post(session, server.url + "/v1/chat/completions", chat(content, **extra))


@pytest.fixture(scope="module")
def faulty():
    """One server whose faults the tests switch through the control endpoint."""
    with running("tiny", time_scale=4) as server:
        yield server


@pytest.fixture
async def clean(faulty: SimServer, session):
    await set_faults(
        faulty,
        session,
        error_rate=0.0,
        metrics_delay_s=0.0,
        tokenize_delay_s=0.0,
        metrics_status=200,
        missing_families=[],
        refuse_above_tokens=0,
        contract_overrun=False,
        health_status=200,
    )
    return faulty


async def test_control_endpoint_reports_and_validates(clean: SimServer, session) -> None:
    body = await set_faults(clean, session, error_rate=0.25, seed=9)
    assert body["error_rate"] == 0.25 and body["seed"] == 9 and "arrivals" in body
    status, err = await post(session, clean.url + "/_sim/faults", {"error_ratio": 1})
    assert status == 400 and "error_ratio" in err["error"]["message"]
    status, err = await post(session, clean.url + "/_sim/faults", {"error_rate": "high"})
    assert status == 400 and "error_rate" in err["error"]["message"]


async def test_error_rate_answers_with_the_configured_status(clean: SimServer, session) -> None:
    await set_faults(clean, session, error_rate=1.0, error_status=503)
    status, body = await completion(clean, session)
    assert status == 503 and body["error"]["type"] == "ServiceUnavailableError"
    await set_faults(clean, session, error_rate=0.5, error_status=500, seed=1)
    statuses = [(await completion(clean, session, max_tokens=1))[0] for _ in range(20)]
    assert set(statuses) == {200, 500}


async def test_refusal_above_a_context_length(clean: SimServer, session) -> None:
    await set_faults(clean, session, refuse_above_tokens=100)
    status, body = await completion(clean, session, "word " * 200)
    assert status == 400 and "maximum context length is 100 tokens" in body["error"]["message"]
    assert (await completion(clean, session, "short", max_tokens=2))[0] == 200


async def test_an_unhealthy_engine_still_lists_its_model(clean: SimServer, session) -> None:
    await set_faults(clean, session, health_status=503)
    async with session.get(clean.url + "/health") as answer:
        assert answer.status == 503
    status, text = await get(session, clean.url + "/v1/models")
    assert status == 200 and json.loads(text)["data"][0]["id"] == "sim-tiny"


async def test_the_max_model_len_flag_lowers_the_context_as_vllm_does(session) -> None:
    with running("tiny", time_scale=4, args=["--max-model-len", "128"]) as server:
        _, text = await get(session, server.url + "/v1/models")
        assert json.loads(text)["data"][0]["max_model_len"] == 128
        status, body = await completion(server, session, "word " * 200, max_tokens=4)
        assert status == 400 and "maximum context length is 128 tokens" in body["error"]["message"]


async def test_contract_overrun_runs_to_max_tokens(clean: SimServer, session) -> None:
    prompt = "Describe the queue in exactly 5 words."
    status, body = await completion(clean, session, prompt, max_tokens=60)
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop" and len(choice["message"]["content"].split()) == 5
    await set_faults(clean, session, contract_overrun=True)
    status, body = await completion(clean, session, prompt, max_tokens=60)
    assert status == 200 and body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 60


async def test_slow_failing_and_incomplete_metrics(clean: SimServer, session) -> None:
    await set_faults(clean, session, metrics_delay_s=0.4)
    started = time.perf_counter()
    assert (await get(session, clean.url + "/metrics"))[0] == 200
    assert time.perf_counter() - started >= 0.4
    await set_faults(clean, session, metrics_delay_s=0.0, metrics_status=500)
    assert (await get(session, clean.url + "/metrics"))[0] == 500
    await set_faults(
        clean, session, metrics_status=200, missing_families=["request_prefill_time_seconds"]
    )
    _, text = await get(session, clean.url + "/metrics")
    names = {f.name for f in text_string_to_metric_families(text)}
    assert "vllm:request_prefill_time_seconds" not in names
    assert "vllm:request_queue_time_seconds" in names


async def test_slow_tokenize_answers_late_with_the_same_tokens(clean: SimServer, session) -> None:
    body = {"model": "sim-tiny", "messages": [{"role": "user", "content": "a slow lane"}]}
    _, prompt = await post(session, clean.url + "/tokenize", body)
    await set_faults(clean, session, tokenize_delay_s=0.4)
    started = time.perf_counter()
    status, slow = await post(session, clean.url + "/tokenize", body)
    assert time.perf_counter() - started >= 0.4
    assert status == 200 and slow["tokens"] == prompt["tokens"]


async def test_queue_limit_answers_429(session) -> None:
    args = ["--set", "engine.max_num_seqs=1", "--set", "engine.max_queued_requests=1"]
    with running("tiny", time_scale=2, args=args) as sim:
        body = chat("x", max_tokens=40, ignore_eos=True)
        url = sim.url + "/v1/chat/completions"
        results = await asyncio.gather(*(post(session, url, body) for _ in range(4)))
        _, text = await get(session, sim.url + "/metrics")
    statuses = sorted(status for status, _ in results)
    assert statuses[0] == 200 and statuses[-1] == 429
    assert 'reason="max_num_queued_reqs"} 0.0' not in text


def fault_server(*faults: str) -> AbstractContextManager[SimServer]:
    """A server of its own for a fault that ends or freezes it; stopped (if need be) after."""
    args = [arg for fault in faults for arg in ("--fault", fault)]
    return running("tiny", time_scale=4, args=args)


async def test_crash_after_requests_exits_with_the_configured_code(session) -> None:
    with fault_server("crash_after_requests=2", "crash_exit_code=3") as server:
        assert (await completion(server, session, max_tokens=2))[0] == 200
        assert (await completion(server, session, max_tokens=2))[0] == 200
        with pytest.raises(aiohttp.ClientError):
            await completion(server, session, max_tokens=2)
        assert server.process.wait(timeout=10) == 3
        assert "fatal error" in server.boot_log()


async def test_oom_fault_is_a_sigkill(session) -> None:
    with fault_server("oom_after_requests=1") as server:
        assert (await completion(server, session, max_tokens=2))[0] == 200
        with pytest.raises(aiohttp.ClientError):
            await completion(server, session, max_tokens=2)
        assert server.process.wait(timeout=10) == -9  # Docker reports it as exit code 137


async def test_hang_freezes_every_endpoint(session) -> None:
    with fault_server("hang_after_requests=1") as server:
        assert (await completion(server, session, max_tokens=2))[0] == 200
        short = aiohttp.ClientTimeout(total=1.0)
        async with aiohttp.ClientSession(timeout=short) as impatient:
            with pytest.raises(asyncio.TimeoutError):
                await completion(server, impatient, max_tokens=2)
            with pytest.raises(asyncio.TimeoutError):
                await get(impatient, server.url + "/health")
        assert server.returncode() is None  # alive, just unresponsive
