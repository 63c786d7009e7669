"""Writing one generation back to its client: SSE chunks as tokens arrive, or one body.

Each engine emission (the tokens one step produced for this request) becomes a
chunk written at once; in a chat stream the role chunk goes out with the first
token, as vLLM sends it. Reasoning tokens and visible tokens never share a chunk.
A token that ends inside a multi-byte character holds its text back until the
character is complete, as vLLM's detokenizer does. A completion streamed with
``return_token_ids`` carries each chunk's token ids, and the prompt's on its first chunk,
as vLLM 0.32 streams them; ``prompt_logprobs`` are refused on a stream
(``simulator.protocol``), as vLLM refuses them.
"""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from simulator.groundtruth import GroundTruth, RequestTrace
from simulator.output import OutputPlan
from simulator.scheduler import Emission
from simulator.tokenizer import Tokenizer
from simulator.wire import (
    SSE_DONE,
    Envelope,
    chat_chunk,
    chat_response,
    chat_role_chunk,
    completion_chunk,
    completion_response,
    dumps,
    sse,
    usage,
    usage_chunk,
)


class TextCursor:
    """Turns the plan's tokens into text, a few tokens at a time, phase by phase."""

    def __init__(self, plan: OutputPlan, tokenizer: Tokenizer) -> None:
        self.plan = plan
        self.tokenizer = tokenizer
        self.index = 0
        self._decoders = {
            p: codecs.getincrementaldecoder("utf-8")("replace") for p in ("reasoning", "content")
        }

    def take(self, count: int) -> list[tuple[str, str, int]]:
        """(phase, text, tokens) parts for the next ``count`` tokens, reasoning first."""
        parts = []
        end = min(self.index + count, len(self.plan.tokens))
        split = min(max(self.plan.reasoning_count, self.index), end)
        for phase, start, stop in (("reasoning", self.index, split), ("content", split, end)):
            if stop > start:
                raw = b"".join(self.tokenizer.token_bytes(t) for t in self.plan.tokens[start:stop])
                last = self.plan.reasoning_count if phase == "reasoning" else len(self.plan.tokens)
                final = stop == last
                parts.append((phase, self._decoders[phase].decode(raw, final), stop - start))
        self.index = end
        return parts


@dataclass
class Generation:
    """One admitted request, as the writers need it."""

    envelope: Envelope
    plan: OutputPlan
    prompt_tokens: int
    queue: asyncio.Queue[Emission]
    trace: RequestTrace
    reasoning_field: str = "reasoning"
    include_usage: bool = False
    continuous_usage: bool = False
    return_token_ids: bool = False
    prompt_ids: tuple[int, ...] = ()  # a completion's prompt ids, when return_token_ids asks

    async def emissions(self) -> AsyncIterator[Emission]:
        while True:
            emission = await self.queue.get()
            yield emission
            if emission.finished:
                return

    def counts(self, completion: int) -> dict[str, int]:
        return usage(self.prompt_tokens, completion)


class SseWriter:
    def __init__(self, response: web.StreamResponse, truth: GroundTruth, trace: RequestTrace):
        self.response = response
        self.truth = truth
        self.trace = trace

    async def send(self, kind: str, payload: Any, tokens: int = 0) -> None:
        data = payload if isinstance(payload, bytes) else sse(payload)
        self.truth.mark(self.trace, kind, tokens)
        await self.response.write(data)


async def open_sse(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8"})
    await response.prepare(request)
    return response


async def stream(
    request: web.Request, gen: Generation, truth: GroundTruth, tokenizer: Tokenizer, chat: bool
) -> web.StreamResponse:
    response = await open_sse(request)
    out = SseWriter(response, truth, gen.trace)
    cursor = TextCursor(gen.plan, tokenizer)
    pending = 0  # tokens whose text is held back
    carried = 0  # tokens whose ids a chunk has carried (return_token_ids)
    async for emission in gen.emissions():
        parts = cursor.take(emission.count)
        if chat and emission.previous_ns is None:
            await out.send("role", chat_role_chunk(gen.envelope))
        for index, (phase, text, tokens) in enumerate(parts):
            last = emission.finished and index == len(parts) - 1
            pending += tokens
            if text or last:
                chunk = make_chunk(gen, phase, text, last, chat)
                if gen.return_token_ids and not chat:
                    with_ids(chunk, gen, carried, carried + pending)
                    carried += pending
                if gen.continuous_usage:
                    chunk["usage"] = gen.counts(cursor.index)
                await out.send(phase if chat else "text", chunk, pending)
                pending = 0
    if gen.include_usage:
        kind = "chat.completion.chunk" if chat else "text_completion"
        await out.send("usage", usage_chunk(gen.envelope, kind, gen.counts(cursor.index)))
    await out.send("done", SSE_DONE)
    await response.write_eof()
    return response


def with_ids(chunk: dict[str, Any], gen: Generation, start: int, stop: int) -> None:
    """A completion chunk's ``token_ids`` (its own tokens) and, on the first, the prompt's
    ``prompt_token_ids``, as vLLM streams them when ``return_token_ids`` asks."""
    choice = chunk["choices"][0]
    choice["token_ids"] = list(gen.plan.tokens[start:stop])
    if start == 0:
        choice["prompt_token_ids"] = list(gen.prompt_ids)


def make_chunk(gen: Generation, phase: str, text: str, last: bool, chat: bool) -> dict[str, Any]:
    finish = gen.plan.finish_reason if last else None
    if not chat:
        return completion_chunk(gen.envelope, text, finish)
    field = gen.reasoning_field if phase == "reasoning" else "content"
    return chat_chunk(gen.envelope, {field: text}, finish)


async def whole(
    gen: Generation,
    truth: GroundTruth,
    tokenizer: Tokenizer,
    chat: bool,
    scored: dict[str, Any] | None = None,  # a completion's prompt_logprobs and prompt ids
) -> web.Response:
    async for _ in gen.emissions():
        pass
    texts = {"reasoning": "", "content": ""}
    cursor = TextCursor(gen.plan, tokenizer)
    for phase, text, _tokens in cursor.take(len(gen.plan.tokens)):
        texts[phase] += text
    counts = gen.counts(cursor.index)
    finish = gen.plan.finish_reason
    if chat:
        reasoning = texts["reasoning"] if gen.plan.reasoning_count else None
        body = chat_response(
            gen.envelope, texts["content"], (gen.reasoning_field, reasoning), finish, counts
        )
    else:
        extra = dict(scored or {})
        if gen.return_token_ids:
            extra["token_ids"] = list(gen.plan.tokens[: cursor.index])
        body = completion_response(gen.envelope, texts["content"], finish, counts, extra)
    truth.mark(gen.trace, "response", cursor.index)
    return web.Response(text=dumps(body), content_type="application/json")
