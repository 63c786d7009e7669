"""The text of a replayed trace's prompts: equal hash_ids blocks are equal token blocks.

A Mooncake record lists the ids of its prompt's blocks (``block_tokens`` each, 512 in
Mooncake's traces): two records that share the first k ids share their first k blocks.
Each block id gets a text of its own, fixed by (campaign seed, namespace, cell, phase,
block id): a tag of 16 hex characters, then plain words whose count was fitted once, on
the planning lane, to ``block_tokens`` tokens. A prompt is its blocks' texts in order, cut
after the word that brings it to the record's ``input_length`` on the lane, the chat
template included: the last block takes what is left (words are prefix-stable, so a cut
block is a prefix of the whole one). So the trace's reuse becomes real prefix reuse on the
engine, and nothing else is shared.

Where uniqueness goes: a synthetic prompt opens with a per-request nonce, which defeats
the prefix cache; a replay must keep the reuse the trace recorded, so the nonce's role is
played by each block's tag. A block id unique in the trace is unique text from its first
token; a shared one is shared whole. The tags also differ between cells, namespaces and
phases (warmups never warm a scored block). A trace prompt carries no canary in its text
(the plan and the journal still bind each request by one): it would add tokens the trace
never recorded. A record without hash_ids (an Azure trace) gets ids of its own: nothing
shared.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from faceoff.formats.attempt.journal import Phase
from workload.text import derive_hex, word_stream


@dataclass(frozen=True)
class TraceKey:
    """What fixes a trace cell's block texts; neither the arm nor the request is part of it."""

    seed: int
    namespace: str
    cell_id: str
    phase: Phase

    def parts(self, block: str) -> tuple[object, ...]:
        return (self.seed, self.namespace, self.cell_id, self.phase.value, "block", block)


def block_ids(
    phase: Phase, position: int, hash_ids: Sequence[int] | None, input_length: int, block: int
) -> list[str]:
    """The ids of a record's blocks, by phase: its hash_ids, else one per block of its own."""
    if hash_ids:
        return [f"{phase.value}/h{h}" for h in hash_ids]
    count = max(1, -(-input_length // block))
    return [f"{phase.value}/r{position}.{k}" for k in range(count)]


def block_tag(key: TraceKey, block: str) -> str:
    """16 hex characters that open the block: unique to it, as a nonce is to a request."""
    return derive_hex(16, *key.parts(block))


def block_text(key: TraceKey, block: str, words: int) -> str:
    """The block's tag and its first ``words`` words (a prefix of any longer count's text)."""
    return f"[{block_tag(key, block)}] " + " ".join(word_stream(words, *key.parts(block)))


def trace_content(key: TraceKey, ids: Sequence[str], words: Sequence[int], total: int) -> str:
    """A record's user message: its blocks' texts in order, whole blocks of ``words`` words
    (one count per block but the last), cut after ``total`` words in all; the last block
    takes whatever words are left."""
    texts, left = [], total
    for k, block in enumerate(ids):
        if k and left <= 0:
            break
        count = left if k == len(ids) - 1 else min(left, words[k])
        texts.append(block_text(key, block, count))
        left -= count
    return " ".join(texts)


def offline_reuse(records: Iterable[tuple[Sequence[str], int]], block: int) -> tuple[int, int]:
    """(prompt tokens an earlier record computed, prompt tokens) over ``records`` in the order
    sent, each ``(block ids, input_length)``: a block hits for the tokens an earlier record
    with the same ids up to it computed of it, and the first miss ends the hits (a prefix)."""
    computed: dict[tuple[object, ...], int] = {}
    hits = total = 0
    for ids, length in records:
        chain: tuple[object, ...] = ()
        matching = True
        for k, tokens in enumerate(_block_tokens(len(ids), length, block)):
            chain = (chain, ids[k])
            before = computed.get(chain, 0)
            if matching:
                hits += min(tokens, before)
                matching = before >= tokens
            computed[chain] = max(before, tokens)
        total += length
    return hits, total


def _block_tokens(count: int, length: int, block: int) -> list[int]:
    """Tokens of each block in a prompt of ``length``: whole blocks, then what is left."""
    whole = [min(block, max(0, length - k * block)) for k in range(count - 1)]
    return [*whole, max(0, length - (count - 1) * block)]
