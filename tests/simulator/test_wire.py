"""The simulator's wire format against captures of a real vLLM 0.32 server, over HTTP."""

from __future__ import annotations

import json
from typing import Any

from simulator.launch import SimServer
from tests.simulator.client import chat, get, post, stream
from tests.simulator.conftest import REFERENCE


def shape(value: Any) -> Any:
    """Keys (in order) all the way down; a list by its first element; scalars as '*'."""
    if isinstance(value, dict):
        return [(key, shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return "*"


def reference(name: str) -> Any:
    return json.loads((REFERENCE / name).read_text())["response"]


def reference_events(name: str) -> list[Any]:
    lines = (REFERENCE / name).read_text().splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


async def test_health_version_and_models_match_the_reference(tiny: SimServer, session) -> None:
    assert await get(session, tiny.url + "/health") == (200, "")
    status, body = await get(session, tiny.url + "/version")
    assert status == 200 and json.loads(body) == {"version": "0.32.0"}
    status, text = await get(session, tiny.url + "/v1/models")
    models = json.loads(text)
    assert shape(models) == shape(reference("models.json"))
    card = models["data"][0]
    assert (card["id"], card["root"], card["max_model_len"]) == (
        "sim-tiny",
        "/models/sim-tiny",
        8192,
    )
    assert card["permission"][0]["id"].startswith("modelperm-")


async def test_tokenize_prompt_and_messages(tiny: SimServer, session) -> None:
    status, body = await post(session, tiny.url + "/tokenize", {"prompt": "Hello world, the model"})
    assert status == 200 and shape(body) == shape(reference("tokenize_prompt.json"))
    assert body["count"] == len(body["tokens"]) and body["token_strs"] is None
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"}]
    status, body = await post(session, tiny.url + "/tokenize", {"messages": messages})
    assert status == 200 and shape(body) == shape(reference("tokenize_messages.json"))
    body = (
        await post(
            session, tiny.url + "/tokenize", {"messages": messages, "return_token_strs": True}
        )
    )[1]
    assert len(body["token_strs"]) == body["count"]
    assert "".join(body["token_strs"]).endswith("<|im_start|>assistant\n")
    status, back = await post(session, tiny.url + "/detokenize", {"tokens": body["tokens"]})
    assert back["prompt"] == "".join(body["token_strs"])


async def test_streamed_chat_is_shaped_like_vllm(tiny: SimServer, session) -> None:
    result = await stream(
        session,
        tiny.url + "/v1/chat/completions",
        chat("Hello world", max_tokens=12, stream_options={"include_usage": True}),
    )
    assert result.status == 200
    ours, theirs = result.chunks, reference_events("chat_stream.sse")
    assert shape(ours[0]) == shape(theirs[0])  # the role chunk, content ""
    assert ours[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert shape(ours[-2]) == shape(theirs[-2])  # the last content chunk, with finish_reason
    assert shape(ours[-1]) == shape(theirs[-1]) and ours[-1]["choices"] == []
    assert result.events[-1].data == "[DONE]"
    assert all(c["id"] == ours[0]["id"] and c["id"].startswith("chatcmpl-") for c in ours)
    token_chunks = result.deltas("reasoning") + result.deltas("content")
    assert len(token_chunks) == result.usage["completion_tokens"] == 12  # one chunk per token
    assert result.finish_reason == "length"


async def test_reasoning_comes_before_content(tiny: SimServer, session) -> None:
    result = await stream(session, tiny.url + "/v1/chat/completions", chat("Hello", seed=3))
    reasoning, content = result.output_times("reasoning"), result.output_times("content")
    assert reasoning and content and max(reasoning) <= min(content)
    assert result.finish_reason == "stop"


async def test_chat_without_streaming_matches_the_reference(tiny: SimServer, session) -> None:
    status, body = await post(
        session, tiny.url + "/v1/chat/completions", chat("Hello world", max_tokens=16, seed=0)
    )
    assert status == 200 and shape(body) == shape(reference("chat_nonstream.json"))
    assert (
        body["usage"]["completion_tokens"] == 16 and body["choices"][0]["finish_reason"] == "length"
    )
    assert body["choices"][0]["message"]["reasoning"]


async def test_completions_accept_token_ids(tiny: SimServer, session) -> None:
    ids = [790, 518, 16, 270, 539, 514, 506, 520, 18]
    body = {"prompt": ids, "max_tokens": 8, "ignore_eos": True}
    status, whole = await post(session, tiny.url + "/v1/completions", body)
    assert status == 200 and shape(whole) == shape(reference("completions_token_ids.json"))
    assert whole["id"].startswith("cmpl-") and whole["usage"]["prompt_tokens"] == len(ids)
    result = await stream(
        session, tiny.url + "/v1/completions", {**body, "stream_options": {"include_usage": True}}
    )
    theirs = reference_events("completions_token_ids_stream.sse")
    assert [shape(c) for c in result.chunks[:1]] == [shape(theirs[0])]
    assert shape(result.chunks[-1]) == shape(theirs[-1])
    assert len(result.deltas("text")) == 8 == result.usage["completion_tokens"]


async def test_completions_score_the_prompt_and_decode_greedily_at_temperature_zero(
    tiny: SimServer, session
) -> None:
    _, tokenized = await post(session, tiny.url + "/tokenize", {"prompt": "The lane is steady."})
    ids = tokenized["tokens"]
    body = {
        "prompt": ids,
        "max_tokens": 5,
        "temperature": 0,
        "prompt_logprobs": 4,
        "return_token_ids": True,
    }
    status, first = await post(session, tiny.url + "/v1/completions", body)
    assert status == 200, first
    choice = first["choices"][0]
    assert choice["prompt_token_ids"] == ids and len(choice["token_ids"]) == 5
    scored = choice["prompt_logprobs"]
    assert scored[0] is None and len(scored) == len(ids)
    assert all(str(token) in entry for token, entry in zip(ids[1:], scored[1:], strict=True))
    assert {"logprob", "rank", "decoded_token"} == set(next(iter(scored[1].values())))
    _, again = await post(session, tiny.url + "/v1/completions", body)
    assert again["choices"][0]["token_ids"] == choice["token_ids"]
    assert again["choices"][0]["prompt_logprobs"] == scored
    status, refused = await post(
        session, tiny.url + "/v1/completions", {**body, "prompt_logprobs": 21}
    )
    assert status == 400 and "greater than max allowed: 20" in refused["error"]["message"]
    # streamed, as vLLM 0.32 streams it: prompt_logprobs refused, the ids chunk by chunk
    streamed = {**body, "stream": True}
    status, refused = await post(session, tiny.url + "/v1/completions", streamed)
    assert status == 400 and refused["error"]["param"] == "prompt_logprobs"
    assert "`prompt_logprobs` are not available when `stream=True`" in refused["error"]["message"]
    del streamed["prompt_logprobs"]
    chunks = (await stream(session, tiny.url + "/v1/completions", streamed)).chunks
    ids_of = [c["choices"][0] for c in chunks if c["choices"]]
    assert ids_of[0]["prompt_token_ids"] == ids
    assert all(c["prompt_token_ids"] is None for c in ids_of[1:])
    assert [t for c in ids_of for t in c["token_ids"]] == choice["token_ids"]


async def test_usage_prompt_tokens_equal_tokenize_count(tiny: SimServer, session) -> None:
    messages = [
        {"role": "system", "content": "You answer briefly."},
        {"role": "user", "content": "Explain the cache ünïcode ✓ {JSON} in one line."},
    ]
    _, counted = await post(session, tiny.url + "/tokenize", {"messages": messages})
    streamed = await stream(
        session,
        tiny.url + "/v1/chat/completions",
        {"messages": messages, "max_tokens": 4, "stream_options": {"include_usage": True}},
    )
    _, whole = await post(
        session, tiny.url + "/v1/chat/completions", {"messages": messages, "max_tokens": 4}
    )
    assert streamed.usage["prompt_tokens"] == whole["usage"]["prompt_tokens"] == counted["count"]


async def test_errors_are_shaped_like_vllm(tiny: SimServer, session) -> None:
    url = tiny.url + "/v1/chat/completions"
    status, body = await post(session, url, chat("word " * 9000))
    assert status == 400 and set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["type"] == "BadRequestError" and body["error"]["code"] == 400
    assert "maximum context length is 8192 tokens" in body["error"]["message"]
    status, body = await post(session, url, chat("hi", max_tokens=9000))
    assert status == 400 and "max_tokens" in body["error"]["message"]
    status, body = await post(session, url, chat("hi", model="other-model"))
    assert status == 404 and body["error"]["type"] == "NotFoundError"
    status, body = await post(session, url, {"messages": []})
    assert status == 400 and body["error"]["param"] == "messages"
    async with session.post(url, data=b"{not json") as response:
        assert response.status == 400
    status, body = await get(session, tiny.url + "/v2/nothing")
    assert status == 404 and json.loads(body) == {"detail": "Not Found"}
