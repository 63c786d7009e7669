"""Hand-built requests and event sequences for the workload tests."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from faceoff.canonical import sha256_hex
from faceoff.formats.attempt.journal import Phase, RequestOutcome, RequestRole, Status
from faceoff.formats.attempt.request_plan import ChatMessage, PlannedRequest
from workload.client import Exchange, RunContext, outcome_of, terminal_status
from workload.request import Body
from workload.stream import SseFramer

MS = 1_000_000

CONTEXT = RunContext(
    cell_id="c1",
    arm="incumbent",
    attempt=1,
    plan_sha256="0" * 64,
    client_run="abc123",
    wall_anchor_utc=datetime(2026, 1, 1, tzinfo=UTC),
    mono_anchor_ns=0,
)


def planned(**overrides: Any) -> PlannedRequest:
    fields: dict[str, Any] = {
        "phase": Phase.SCORED,
        "index": 0,
        "stream": 0,
        "order": 0,
        "start_offset_ms": 0,
        "role": RequestRole.SINGLE,
        "text_kind": "prose",
        "messages": [ChatMessage(role="user", content="[n] hello")],
        "max_tokens": 64,
        "temperature": 0.6,
        "top_p": 0.95,
        "seed": 7,
        "reasoning_effort": None,
        "ignore_eos": False,
        "nonce": "n",
        "canary": "CANARY-X",
        "marker": None,
        "contract_words": None,
        "filler_words": 0,
        "target_input_tokens": 10,
        "input_tokens": 10,
        "prompt_sha256": "p" * 64,
        "wire_sha256": "",
        "wire_bytes": 0,
        "expect_length_finish": False,
    }
    fields.update(overrides)
    request = PlannedRequest(**fields)
    wire = Body.of(request).wire("tiny")
    return request.model_copy(update={"wire_sha256": sha256_hex(wire), "wire_bytes": len(wire)})


def chunk(content: str | None = None, reasoning: str | None = None, **extra: Any) -> bytes:
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning"] = reasoning
    delta.update(extra.pop("delta", {}))
    choice = {"index": 0, "delta": delta, "finish_reason": extra.pop("finish_reason", None)}
    event = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}
    return sse(event)


def usage_chunk(prompt: int, completion: int, reasoning: int | None = None) -> bytes:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return sse({"id": "chatcmpl-1", "choices": [], "usage": usage})


def sse(event: dict[str, Any] | str) -> bytes:
    text = event if isinstance(event, str) else json.dumps(event)
    return f"data: {text}\n\n".encode()


DONE = b"data: [DONE]\n\n"


def replay(
    reads: list[tuple[int, bytes]], request: PlannedRequest | None = None, send_ms: int = 0
) -> RequestOutcome:
    """Feed timed reads (ms after 0, bytes) through the client's parser into a journal line."""
    ex = Exchange(request or planned(), due_ns=0, send_ns=send_ms * MS, http_status=200)
    framer = SseFramer()
    for at_ms, data in reads:
        for payload, _end in framer.feed(data):
            ex.state.observe(payload, at_ms * MS)
    ex.status, ex.error = terminal_status(ex)
    ex.end_ns = (reads[-1][0] if reads else send_ms) * MS
    return outcome_of(CONTEXT, ex)


def failed(status: Status) -> RequestOutcome:
    ex = Exchange(planned(), due_ns=0, send_ns=0, end_ns=5 * MS)
    ex.fail(status, "boom")
    return outcome_of(CONTEXT, ex)
