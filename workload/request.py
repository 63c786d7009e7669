"""One planned request: its chat messages, its sampling, and the hashes that bind it.

``PlannedRequest`` is a line of ``requests.json`` (``workload.plan``); ``Body`` is what
its wire hash covers; ``planned_request`` makes one from a prompt and its token count on
the lane, for every planner (synthetic prompts, dataset rows, a replayed trace).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import Field

from faceoff.artifact import Spec
from faceoff.canonical import canonical_bytes, sha256_hex
from faceoff.formats.attempt.journal import Phase, RequestRole
from matrix.cell import Sampling
from matrix.fields import omitted_at
from workload.prompts import Prompt, PromptKey
from workload.stream_layout import Slot
from workload.text import derive_int
from workload.tokenizer import TokenCount


class ChatMessage(Spec):
    role: Literal["system", "user", "assistant"] = Field(description="Chat role.")
    content: str = Field(description="Message text, exactly as sent.")


def chat_template_kwargs(reasoning_effort: str | None) -> dict[str, Any] | None:
    """``chat_template_kwargs`` of a request: sent in its body and to ``/tokenize`` alike."""
    return {"reasoning_effort": reasoning_effort} if reasoning_effort else None


class PlannedRequest(Spec):
    phase: Phase = Field(description="warmup | scored | diagnostic.")
    index: int = Field(ge=0, description="Index within the phase; the pair key.")
    stream: int = Field(ge=0, description="Closed-loop stream that sends it.")
    order: int = Field(ge=0, description="Position within its stream.")
    start_offset_ms: int = Field(ge=0, description="First of a stream: delay after the start.")
    role: RequestRole = Field(description="Role in the workload's pattern.")
    text_kind: Literal["prose", "structured"] = Field(description="Kind of document text.")
    messages: list[ChatMessage] = Field(description="Chat messages; the nonce starts the first.")
    max_tokens: int = Field(ge=1, description="max_tokens sent.")
    temperature: float = Field(description="Sampling temperature sent.")
    top_p: float = Field(description="top_p sent.")
    seed: int | None = Field(description="Sampling seed sent; None: none (sampling.seed off).")
    reasoning_effort: str | None = Field(description="chat_template_kwargs.reasoning_effort.")
    ignore_eos: bool = Field(description="ignore_eos sent (only when true).")
    nonce: str = Field(description="Cold-cache nonce at the very start of the prompt.")
    canary: str = Field(description="Per-request canary string in the prompt.")
    marker: str | None = Field(description="Needle marker, when the prompt holds one.")
    contract_words: int | None = Field(description="Output contract: exactly N words.")
    filler_words: int = Field(ge=0, description="Words of document text the search settled on.")
    target_input_tokens: int = Field(description="Input token target.")
    input_tokens: int = Field(description="Prompt tokens by the lane's /tokenize (template on).")
    prompt_sha256: str = Field(description="sha256 of the prompt-token vector (compact JSON).")
    wire_sha256: str = Field(description="sha256 of the serialized request body.")
    wire_bytes: int = Field(description="Size of the serialized request body.")
    expect_length_finish: bool = Field(
        description="finish_reason 'length' is the intended end (ignore_eos or max_tokens=1)."
    )
    step: int | None = Field(
        default=None,
        ge=0,
        exclude_if=omitted_at(None),
        description="Open loop: the sweep step (0 for a single run) that sends it.",
    )
    arrival_s: float | None = Field(
        default=None,
        ge=0,
        exclude_if=omitted_at(None),
        description="Open loop: seconds after its step's start it is due, at 1 request/s "
        "(divided by the step's rate when sent).",
    )

    def template_kwargs(self) -> dict[str, Any] | None:
        return chat_template_kwargs(self.reasoning_effort)

    def wire(self, model: str) -> bytes:
        """The request body, byte for byte as sent (canonical JSON)."""
        return self.body().wire(model)

    def body(self) -> Body:
        return Body(
            messages=self.messages,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            seed=self.seed,
            reasoning_effort=self.reasoning_effort,
            ignore_eos=self.ignore_eos,
        )


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
