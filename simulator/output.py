"""What the simulated model answers: a token plan decided when the request arrives.

The plan is deterministic: it depends on the request's ``seed`` (or the prompt's
hash when there is none), the profile's length distributions and the prompt's
conventions, which the workload package writes on purpose:

- ``exactly N words`` in the last user message: a compliant answer has exactly N
  visible words and stops (the ``contract_overrun`` fault ignores it);
- ``The secret marker is: <MARKER>``: the answer repeats the marker verbatim while
  the prompt is within the profile's verified needle length, a garbled one beyond;
- ``response_format`` JSON: the visible answer is one JSON document;
- otherwise a natural answer whose length is drawn from the profile.

Reasoning tokens come first (their count scales with ``reasoning_effort``), then
the visible content; ``max_tokens`` cuts either and makes the finish "length".
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from array import array
from dataclasses import dataclass, replace
from typing import Any

from simulator.profile import OutputSpec
from simulator.protocol import GenerationRequest
from simulator.tokenizer import Tokenizer

CONTRACT = re.compile(r"exactly (\d+) words")
NEEDLE = re.compile(r"The secret marker is: (\S+)")
WORD_LIST = """
the a model server token answer request value system result data time first second engine
cache block queue prefill decode batch step stream output input length context signal measure
report review plan cell lane pair sample family latency rate steady careful simple clear exact
small large early late quiet fast slow open close run wait send read write check count keep
move turn hold and or but so then when while after before with without into over under near
far each every some many few more less most least also only just still even
"""
PROSE_WORDS = tuple(WORD_LIST.split())
STRUCTURED_KEYS = ("id", "name", "value", "kind", "count", "ok", "items", "status")


@dataclass(frozen=True)
class OutputPlan:
    tokens: tuple[int, ...]  # reasoning tokens first, then visible ones
    reasoning_count: int
    finish_reason: str  # once every planned token is emitted
    text_kind: str  # "structured" or "prose": selects speculative acceptance


def text_kind(instruction: str, response_format: dict[str, Any] | None) -> str:
    structured = "JSON" in instruction or "```" in instruction
    return "structured" if structured or is_json_format(response_format) else "prose"


def is_json_format(response_format: dict[str, Any] | None) -> bool:
    if not response_format:
        return False
    return response_format.get("type") in ("json_object", "json_schema")


def plan_output(
    request: GenerationRequest,
    spec: OutputSpec,
    tokenizer: Tokenizer,
    *,
    max_tokens: int,
    overrun: bool = False,
) -> OutputPlan:
    """The answer to ``request``, cut at ``max_tokens`` (its own, or what the context leaves)."""
    rng = random.Random(request_seed(request))
    kind = text_kind(request.instruction, request.response_format)
    reasoning = reasoning_tokens(request, spec, rng, tokenizer)
    contract = contract_words(request.instruction)
    if overrun and contract is not None:
        filler = words_to_tokens(rng, tokenizer, max_tokens, kind)
        return cut_plan(reasoning, filler, max_tokens, kind, stopped=False)
    visible = visible_tokens(request, spec, rng, tokenizer, kind, contract=contract)
    if request.ignore_eos:
        need = max_tokens - len(reasoning) - len(visible)
        visible += words_to_tokens(rng, tokenizer, max(need, 0), kind)
        return cut_plan(reasoning, visible, max_tokens, kind, stopped=False)
    return cut_plan(reasoning, visible, max_tokens, kind, stopped=True)


def request_seed(request: GenerationRequest) -> int:
    if request.seed is not None:
        return int(request.seed)
    digest = hashlib.sha256(array("q", request.prompt_tokens).tobytes()).digest()
    return int.from_bytes(digest[:8], "big")


def cut_plan(
    reasoning: list[int], visible: list[int], max_tokens: int, kind: str, *, stopped: bool
) -> OutputPlan:
    tokens = (reasoning + visible)[:max_tokens]
    finished = stopped and len(reasoning) + len(visible) <= max_tokens
    return OutputPlan(
        tokens=tuple(tokens),
        reasoning_count=min(len(reasoning), max_tokens),
        finish_reason="stop" if finished else "length",
        text_kind=kind,
    )


def draw_length(rng: random.Random, median: float, sigma: float) -> int:
    return (
        max(1, round(rng.lognormvariate(0.0, sigma) * median)) if sigma else max(1, round(median))
    )


def reasoning_tokens(
    request: GenerationRequest, spec: OutputSpec, rng: random.Random, tokenizer: Tokenizer
) -> list[int]:
    if not (request.reasoning and spec.reasoning):
        return []
    effort = request.reasoning_effort or spec.default_reasoning_effort
    count = draw_length(rng, spec.reasoning_median(effort), spec.length_sigma)
    return words_to_tokens(rng, tokenizer, count, "prose")


def contract_words(instruction: str) -> int | None:
    """N of an ``exactly N words`` contract in the instruction, if it states one."""
    contract = CONTRACT.search(instruction)
    return int(contract.group(1)) if contract else None


def visible_tokens(
    request: GenerationRequest,
    spec: OutputSpec,
    rng: random.Random,
    tokenizer: Tokenizer,
    kind: str,
    *,
    contract: int | None,
) -> list[int]:
    if is_json_format(request.response_format):
        return tokenizer.encode(json_answer(request.response_format or {}, rng))
    needle = NEEDLE.search(request.context_text)
    if needle:
        words = needle_words(needle.group(1), request, spec, rng)
        count = contract if contract is not None else len(words)
        return tokenizer.encode(" " + " ".join(fit_words(words, count, rng)))
    if contract is not None:
        return tokenizer.encode(" " + " ".join(random_words(rng, contract)))
    count = draw_length(rng, spec.visible_tokens_median, spec.length_sigma)
    return words_to_tokens(rng, tokenizer, count, kind)


def needle_limited(spec: OutputSpec, miss_above: int) -> OutputSpec:
    """``spec`` with the verified needle length lowered to ``miss_above`` (0: unchanged)."""
    if not miss_above:
        return spec
    verified = spec.needle_verified_tokens
    limit = min(verified, miss_above) if verified else miss_above
    return replace(spec, needle_verified_tokens=limit)


def needle_words(
    marker: str, request: GenerationRequest, spec: OutputSpec, rng: random.Random
) -> list[str]:
    limit = spec.needle_verified_tokens
    recalled = marker if not limit or len(request.prompt_tokens) <= limit else garble(marker, rng)
    return ["The", "secret", "marker", "is", recalled]


def garble(marker: str, rng: random.Random) -> str:
    """A plausible wrong recall: one character changed, never the marker itself."""
    chars = list(marker)
    index = rng.randrange(len(chars))
    chars[index] = "X" if chars[index] != "X" else "Y"
    return "".join(chars)


def fit_words(words: list[str], count: int, rng: random.Random) -> list[str]:
    """Exactly ``count`` words that keep the marker (the last word of ``words``)."""
    if count >= len(words):
        return words + random_words(rng, count - len(words))
    return words[-count:] if count > 0 else []


def random_words(rng: random.Random, count: int) -> list[str]:
    return [rng.choice(PROSE_WORDS) for _ in range(count)]


def words_to_tokens(rng: random.Random, tokenizer: Tokenizer, count: int, kind: str) -> list[int]:
    """Exactly ``count`` tokens of prose or JSON-like text."""
    tokens: list[int] = []
    while len(tokens) < count:
        piece = structured_piece(rng) if kind == "structured" else " " + rng.choice(PROSE_WORDS)
        tokens += tokenizer.encode(piece)
    return tokens[:count]


def structured_piece(rng: random.Random) -> str:
    key = rng.choice(STRUCTURED_KEYS)
    return f' "{key}": {rng.randrange(1000)},'


def json_answer(response_format: dict[str, Any], rng: random.Random) -> str:
    schema = (response_format.get("json_schema") or {}).get("schema")
    value = schema_instance(schema, rng) if isinstance(schema, dict) else {"answer": "ok"}
    return json.dumps(value)


def schema_instance(schema: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A small value that satisfies common JSON-schema shapes (enough for smoke probes)."""
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type", "object")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "object":
        props = schema.get("properties", {}) if depth < 4 else {}
        return {k: schema_instance(v, rng, depth + 1) for k, v in props.items()}
    if kind == "array":
        item = schema.get("items", {"type": "string"})
        return [schema_instance(item, rng, depth + 1)] if depth < 4 else []
    scalars = {
        "integer": rng.randrange(100),
        "number": rng.randrange(1000) / 10,
        "boolean": True,
        "null": None,
    }
    return scalars.get(kind, rng.choice(PROSE_WORDS))
