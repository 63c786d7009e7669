"""The rows of a dataset or trace file a plan used, kept in its ``requests.json``
(``faceoff.formats.attempt.request_plan``), and the requests they rebuild.

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

from faceoff.formats.attempt.journal import Phase
from faceoff.formats.attempt.request_plan import (
    DatasetRow,
    DatasetSource,
    PlannedRequest,
    TraceRow,
    TraceSource,
)
from workload.prompts import PromptKey
from workload.traffic.trace_text import TraceKey, block_ids, trace_content

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
