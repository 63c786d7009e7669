"""What the simulated model answers, over HTTP: the conventions the workload relies on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from simulator.launch import SimServer, running, stop, wait_ready
from tests.simulator.client import chat, post, stream


async def answer(server: SimServer, session, content: str, **extra) -> dict:
    status, body = await post(session, server.url + "/v1/chat/completions", chat(content, **extra))
    assert status == 200, body
    return body


def message(body: dict) -> dict:
    return body["choices"][0]["message"]


async def test_exactly_n_words_is_honoured(tiny: SimServer, session) -> None:
    for n in (1, 7, 40):
        body = await answer(tiny, session, f"List things in exactly {n} words.", seed=n)
        assert len(message(body)["content"].split()) == n
        assert body["choices"][0]["finish_reason"] == "stop"


async def test_a_needle_is_recalled_verbatim_within_the_verified_length(tiny, session) -> None:
    marker = "MK-7F3A-09BC-11DE"
    short = f"{'filler ' * 100}\nThe secret marker is: {marker}\n{'more ' * 100} What is it?"
    long = f"{'filler ' * 1500}\nThe secret marker is: {marker}\n{'more ' * 1500} What is it?"
    assert marker in message(await answer(tiny, session, short))["content"]
    recalled = message(await answer(tiny, session, long))["content"]  # > 4,000 tokens
    assert marker not in recalled and "MK-" in recalled


async def test_json_response_format_yields_json(tiny: SimServer, session) -> None:
    body = await answer(tiny, session, "Give a record.", response_format={"type": "json_object"})
    assert isinstance(json.loads(message(body)["content"]), dict)
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
    }
    body = await answer(
        tiny,
        session,
        "Give a record.",
        response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": schema}},
    )
    parsed = json.loads(message(body)["content"])
    assert isinstance(parsed["name"], str) and isinstance(parsed["count"], int)


async def test_reasoning_effort_scales_reasoning(tiny: SimServer, session) -> None:
    lengths = {}
    for effort in ("low", "max"):
        result = await stream(
            session,
            tiny.url + "/v1/chat/completions",
            chat("Think.", seed=5, chat_template_kwargs={"reasoning_effort": effort}),
        )
        lengths[effort] = len(result.deltas("reasoning"))
    assert 0 < lengths["low"] < lengths["max"]
    off = await answer(
        tiny, session, "No thinking.", chat_template_kwargs={"enable_thinking": False}
    )
    assert message(off)["reasoning"] is None


async def test_the_same_seed_gives_the_same_answer(tiny: SimServer, session) -> None:
    first = message(await answer(tiny, session, "Tell me.", seed=11))
    again = message(await answer(tiny, session, "Tell me.", seed=11))
    other = message(await answer(tiny, session, "Tell me.", seed=12))
    assert first == again and first != other


async def test_ignore_eos_gives_exactly_max_tokens(tiny: SimServer, session) -> None:
    body = await answer(tiny, session, "Go on.", max_tokens=77, ignore_eos=True)
    assert body["usage"]["completion_tokens"] == 77
    assert body["choices"][0]["finish_reason"] == "length"


async def test_reasoning_content_for_older_clients(session) -> None:
    with running("tiny", args=["--reasoning-field", "reasoning_content"]) as sim:
        result = await stream(session, sim.url + "/v1/chat/completions", chat("Hi", seed=1))
        body = await answer(sim, session, "Hi", seed=1)
    assert result.deltas("reasoning_content") and not result.deltas("reasoning")
    assert message(body)["reasoning_content"] and "reasoning" not in message(body)


def faceoff_sim(log: Path, *args: str) -> SimServer:
    """`faceoff sim ARGS` on a free port, started as a person would (not yet ready)."""
    command = [sys.executable, "-m", "flows", "sim", "--port", "0", *args]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return SimServer(process=process, log_path=log)


async def test_faceoff_sim_takes_the_reasoning_field(session, tmp_path: Path) -> None:
    """`faceoff sim --reasoning-field` (docs/architecture.md "Reasoning field") reaches the
    simulator it starts."""
    server = faceoff_sim(tmp_path / "sim.log", "--reasoning-field", "reasoning_content")
    try:
        wait_ready(server)
        result = await stream(session, server.url + "/v1/chat/completions", chat("Hi", seed=1))
    finally:
        stop(server)
    assert result.deltas("reasoning_content") and not result.deltas("reasoning")


async def test_the_needle_miss_fault_garbles_the_marker_beyond_its_length(session) -> None:
    marker = "MK-7F3A-09BC-11DE"
    short = f"{'filler ' * 20}\nThe secret marker is: {marker}\n{'more ' * 20} What is it?"
    long = f"{'filler ' * 200}\nThe secret marker is: {marker}\n{'more ' * 200} What is it?"
    with running("tiny", args=["--fault", "needle_miss_above_tokens=300"]) as sim:
        assert marker in message(await answer(sim, session, short))["content"]
        recalled = message(await answer(sim, session, long))["content"]
    assert marker not in recalled and "MK-" in recalled
