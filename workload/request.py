"""One planned request: its chat messages, its sampling, and the hashes that bind it.

``PlannedRequest`` is a line of ``requests.json`` (``faceoff.formats.attempt.request_plan``);
``Body`` is what its wire hash covers; ``planned_request`` makes one from a prompt and its
token count on the lane, for every planner (synthetic prompts, dataset rows, a replayed trace).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from faceoff.canonical import canonical_bytes, sha256_hex
from faceoff.formats.attempt.request_plan import ChatMessage, PlannedRequest
from matrix.cell import Sampling
from workload.prompts import Prompt, PromptKey
from workload.stream_layout import Slot
from workload.text import derive_int
from workload.tokenizer import TokenCount


def chat_template_kwargs(reasoning_effort: str | None) -> dict[str, Any] | None:
    """``chat_template_kwargs`` of a request: sent in its body and to ``/tokenize`` alike."""
    return {"reasoning_effort": reasoning_effort} if reasoning_effort else None


@dataclass(frozen=True)
class Body:
    """What a request's body carries besides the model: the part its wire hash covers."""

    messages: list[ChatMessage]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    reasoning_effort: str | None
    ignore_eos: bool

    @classmethod
    def of(cls, request: PlannedRequest) -> Body:
        """A planned request's body (its ``wire`` is the bytes sent)."""
        return cls(
            messages=request.messages,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            top_p=request.top_p,
            seed=request.seed,
            reasoning_effort=request.reasoning_effort,
            ignore_eos=request.ignore_eos,
        )

    def wire(self, model: str) -> bytes:
        """The request body, byte for byte as sent (canonical JSON)."""
        body: dict[str, Any] = {
            "model": model,
            "messages": [m.model_dump() for m in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if kwargs := chat_template_kwargs(self.reasoning_effort):
            body["chat_template_kwargs"] = kwargs
        if self.ignore_eos:
            body["ignore_eos"] = True
        return canonical_bytes(body)

    def hashes(self, tokens: TokenCount, model: str) -> dict[str, Any]:
        """The fields of a planned request that count and hash this body on a lane."""
        wire = self.wire(model)
        return {
            "input_tokens": tokens.count,
            "prompt_sha256": tokens.vector_sha256,
            "wire_sha256": sha256_hex(wire),
            "wire_bytes": len(wire),
        }


@dataclass(frozen=True)
class Sent:
    """What a request asks of the engine besides its messages."""

    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    reasoning_effort: str | None
    ignore_eos: bool


def sent_for(sampling: Sampling, key: PromptKey, *, max_tokens: int, ignore_eos: bool) -> Sent:
    """What a request of ``key`` sends under ``sampling`` (its seed derived from its key)."""
    seed = derive_int(2**31, *key.parts("seed")) if sampling.seed else None
    return Sent(max_tokens, sampling.temperature, sampling.top_p, seed,
                sampling.reasoning_effort, ignore_eos)  # fmt: skip


def planned_request(
    slot: Slot, prompt: Prompt, tokens: TokenCount, sent: Sent, *, model: str, target: int,
    filler_words: int,
) -> PlannedRequest:  # fmt: skip
    """The request of ``slot``: ``prompt`` counted as ``tokens`` on the lane, hashed for
    ``model``."""
    body = Body(messages=[ChatMessage.model_validate(m) for m in prompt.messages], **asdict(sent))
    return PlannedRequest(
        **asdict(body),
        **body.hashes(tokens, model),
        phase=slot.phase,
        index=slot.index,
        stream=slot.stream,
        order=slot.order,
        start_offset_ms=slot.start_offset_ms,
        role=slot.role,
        text_kind=prompt.text_kind,
        nonce=prompt.nonce,
        canary=prompt.canary,
        marker=prompt.marker,
        contract_words=prompt.contract_words,
        filler_words=filler_words,
        target_input_tokens=target,
        expect_length_finish=sent.ignore_eos or sent.max_tokens == 1,
    )
