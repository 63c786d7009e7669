"""The rows of a dataset or trace file a plan used, kept in its ``requests.json``.

A plan built from a file (``workload.traffic.sourced``) records the file (path, sha256, format)
and, for every planned request, the row it came from: a dataset row's prompt messages,
its prompt tokens on the planning lane and its output length; a trace record's time,
lengths and hash_ids, with each block's fitted word count. From these alone
``rebuilt_requests`` makes each request's messages, token target and max_tokens again,
which is how the guard (and so ``faceoff audit``) proves that a plan sent what its rows
say; both arms' plans must hold the same rows (``guards.pair``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from faceoff.artifact import Spec
from faceoff.formats.attempt.journal import Phase
from workload.prompts import PromptKey
from workload.request import PlannedRequest
from workload.traffic.trace_text import TraceKey, block_ids, trace_content


class Turn(Spec):
    role: Literal["system", "user", "assistant"] = Field(description="Chat role in the file.")
    content: str = Field(description="The turn's text as the file has it.")


class DatasetRow(Spec):
    phase: Phase = Field(description="Phase of the request it became.")
    index: int = Field(ge=0, description="Index of the request it became.")
    position: int = Field(ge=0, description="The row's index in the file (line or element).")
    messages: list[Turn] = Field(description="The row's prompt, before any nonce.")
    prompt_tokens: int = Field(description="Prompt tokens on the planning lane (the target).")
    output_tokens: int | None = Field(
        description="The row's output length (given, or its answer's tokens on the lane); "
        "None: the cell's sampling."
    )


class TraceRow(Spec):
    phase: Phase = Field(description="Phase of the request it became.")
    index: int = Field(ge=0, description="Index of the request it became.")
    position: int = Field(ge=0, description="The record's index in the file.")
    at_ms: float = Field(description="Recorded time, ms after the file's first record.")
    input_length: int = Field(ge=1, description="Recorded prompt tokens: the input target.")
    output_length: int = Field(ge=1, description="Recorded output tokens.")
    hash_ids: list[int] | None = Field(description="Mooncake block ids; None: none shared.")


class Reuse(Spec):
    hit_tokens: int = Field(description="Prompt tokens an earlier scored record computed.")
    input_tokens: int = Field(description="Prompt tokens of the scored records.")
    ratio: float | None = Field(description="hit_tokens / input_tokens.")


class DatasetSource(Spec):
    kind: Literal["dataset"] = Field(default="dataset", description="A dataset's rows.")
    file: str = Field(description="The dataset file, as the frozen matrix names it.")
    sha256: str = Field(description="sha256 of the file's bytes.")
    format: str = Field(description="sharegpt | openai | prompts.")
    nonce: bool = Field(description="Whether a nonce opens each prompt.")
    skipped: int = Field(
        ge=0, description="Rows drawn but left out: longer than input_tokens, or no output length."
    )
    rows: list[DatasetRow] = Field(description="The row of each planned request.")


class TraceSource(Spec):
    kind: Literal["trace"] = Field(default="trace", description="A trace's records.")
    file: str = Field(description="The trace file, as the frozen matrix names it.")
    sha256: str = Field(description="sha256 of the file's bytes.")
    format: str = Field(description="mooncake | azure.")
    time_scale: float = Field(description="Replay speed: recorded time / time_scale.")
    block_tokens: int = Field(description="Tokens of each hash_ids block.")
    block_words: dict[str, int] = Field(
        description="Words of each block's text, by '<phase>/<block id>': fitted on the "
        "planning lane to block_tokens."
    )
    reuse: Reuse = Field(
        description="Prefix reuse computed offline from the scored records' hash_ids: what "
        "an engine with an unbounded prefix cache of 1-token blocks would hit."
    )
    rows: list[TraceRow] = Field(description="The record of each planned request.")


Source = DatasetSource | TraceSource


@dataclass(frozen=True)
class Rebuilt:
    """What a request's row says it sends."""

    messages: list[dict[str, str]]
    target_input_tokens: int
    max_tokens: int | None  # None: the cell's sampling decides, not the row


def dataset_messages(row: DatasetRow, nonce: str | None) -> list[dict[str, str]]:
    """The row's prompt as sent: a nonce, when the cell has one, opens the first message."""
    messages = [turn.model_dump() for turn in row.messages]
    if nonce is not None:
        messages[0]["content"] = f"[{nonce}] {messages[0]['content']}"
    return messages


def rebuilt_dataset(row: DatasetRow, nonce: str | None, cap: int) -> Rebuilt:
    """``cap``: the cell's sampling.max_tokens, the most a row's length may ask."""
    out = None if row.output_tokens is None else min(row.output_tokens, cap)
    return Rebuilt(dataset_messages(row, nonce), row.prompt_tokens, out)


def rebuilt_trace(
    source: TraceSource, row: TraceRow, key: PromptKey, *, words: int, cap: int
) -> Rebuilt:
    """The record's prompt: its blocks' texts, cut after ``words`` words in all."""
    trace = TraceKey(key.seed, key.namespace, key.cell_id, key.phase)
    ids = block_ids(row.phase, row.position, row.hash_ids, row.input_length, source.block_tokens)
    whole = [source.block_words[i] for i in ids[:-1]]
    content = trace_content(trace, ids, whole, words)
    return Rebuilt([{"role": "user", "content": content}], row.input_length,
                   min(row.output_length, cap))  # fmt: skip


def rows_by_request(source: Source) -> dict[tuple[Phase, int], DatasetRow | TraceRow]:
    """Each row by the (phase, index) of the request it became."""
    rows: list[DatasetRow] | list[TraceRow] = source.rows
    return {(row.phase, row.index): row for row in rows}


def rebuilt_request(
    source: Source, row: DatasetRow | TraceRow, request: PlannedRequest, *, seed: int,
    namespace: str, prompt_id: str, cap: int,
) -> Rebuilt:  # fmt: skip
    """What the request's row says it sends. ``cap``: the cell's sampling.max_tokens, the
    most a row's length may ask."""
    if isinstance(source, DatasetSource) and isinstance(row, DatasetRow):
        return rebuilt_dataset(row, request.nonce if source.nonce else None, cap)
    if isinstance(source, TraceSource) and isinstance(row, TraceRow):
        key = PromptKey(seed, namespace, prompt_id, request.phase, request.index)
        return rebuilt_trace(source, row, key, words=request.filler_words, cap=cap)
    raise ValueError(f"a {source.kind} source holds no {type(row).__name__}")
