"""A trace cell's plan: each recorded request replayed at its time, its blocks real blocks.

The first ``requests`` records are the scored requests, in file order; a warmup replays
record ``i`` (cycling) with block texts of its own phase. Each block id's text is fitted
once, on the planning lane, to ``block_tokens`` tokens (``workload.traffic.trace_text``); each
prompt is cut after the word that makes it the record's ``input_length`` on the lane, and
its max_tokens is the record's ``output_length`` (at most the cell's sampling.max_tokens),
sent with ignore_eos. The scored requests are due at their recorded times divided by
``time_scale``, planned at the replay's mean rate (``workload.schedule.trace_arrivals``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from faceoff.formats.attempt.journal import Phase
from faceoff.formats.attempt.request_plan import (
    OpenLoad,
    PlannedRequest,
    Reuse,
    TraceRow,
    TraceSource,
)
from matrix.cell import Cell, Sampling
from matrix.sources import ParsedRecord, pinned_bytes, trace_records
from matrix.traffic import Trace
from workload.fit import Fit, Rate, fit_filler
from workload.prompts import Prompt, canary_of
from workload.schedule import trace_arrivals
from workload.stream_layout import Slot
from workload.tokenizer import Tokenizer
from workload.traffic.sourced import SourcedPlanner
from workload.traffic.trace_text import (
    TraceKey,
    block_ids,
    block_tag,
    block_text,
    offline_reuse,
    trace_content,
)

EMPTY = ({"role": "user", "content": ""},)  # a user turn's cost without its text
TAIL_TOKENS = 16.0  # first guess of what a prompt adds beyond its blocks' words


class TracePlanner(SourcedPlanner):
    def __init__(  # noqa: PLR0917  (the plan's identity, one argument each)
        self,
        cell: Cell,
        seed: int,
        namespace: str,
        model: str,
        tokenizer: Tokenizer,
        sampling: Sampling,
    ) -> None:
        super().__init__(cell, seed, namespace, model, tokenizer, sampling)
        assert cell.trace is not None, "a trace cell has a trace"
        self.spec: Trace = cell.trace
        data = pinned_bytes(Path(self.spec.file), self.spec.sha256, where=self.where(self.spec))
        self.records = trace_records(data, self.spec.format, where=self.spec.file)
        scored = self.records[: cell.requests]
        times = [r.at_ms / 1000.0 / self.spec.time_scale for r in scored]
        self.trace_rate, self.offsets = trace_arrivals(times)
        self.block_words: dict[str, int] = {}
        self.block_rate = Rate()
        self.tail_tokens = TAIL_TOKENS  # the template and the last block's tag
        self.cuts: dict[tuple[tuple[str, ...], int], int] = {}  # (blocks, length) -> words
        self.rows: list[TraceRow] = []

    @property
    def source(self) -> TraceSource:
        spec = self.spec
        return TraceSource(file=spec.file, sha256=spec.sha256, format=spec.format,
                           time_scale=spec.time_scale, block_tokens=spec.block_tokens,
                           block_words=dict(sorted(self.block_words.items())),
                           reuse=self._reuse(), rows=self.rows)  # fmt: skip

    def arrivals(self, load: OpenLoad) -> list[float]:
        return self.offsets

    async def plan_all(self, slots: list[Slot]) -> list[PlannedRequest]:
        return [await self.plan(slot) for slot in slots]

    async def plan(self, slot: Slot) -> PlannedRequest:
        record = self.records[slot.index % len(self.records)]
        max_tokens = min(record.output_length, self.sampling.max_tokens)
        what = f"trace record {record.position} ({slot.phase.value} request {slot.index})"
        self.max_model_len = (await self.count(EMPTY)).max_model_len
        if not self.fits(record.input_length, max_tokens):
            raise self.refuse(what, record.input_length, max_tokens)
        key = TraceKey(self.seed, self.namespace, self.cell.prompt_id, slot.phase)
        ids = self._ids(slot.phase, record)
        words = [await self._block(key, block) for block in ids[:-1]]
        fit = await self._fit(slot, key, ids, words, record)
        self.rows.append(_row(slot, record))
        return self.request(slot, fit.prompt, fit.tokens, target=record.input_length,
                            filler_words=fit.filler_words, max_tokens=max_tokens,
                            ignore_eos=True)  # fmt: skip

    def _ids(self, phase: Phase, record: ParsedRecord) -> list[str]:
        block = self.spec.block_tokens
        return block_ids(phase, record.position, record.hash_ids, record.input_length, block)

    async def _block(self, key: TraceKey, block: str) -> int:
        """Words of the block's text that make ``block_tokens`` tokens on the lane."""
        if block not in self.block_words:
            empty = (await self.count(EMPTY)).count
            fit = await fit_filler(
                lambda n: _user(block_text(key, block, n), block_tag(key, block), ""),
                empty + self.spec.block_tokens,
                self.tokenizer,
                template_kwargs=self.template_kwargs,
                rate=self.block_rate,
                where=f"cell {self.cell.id} block {block}",
            )
            self.block_words[block] = fit.filler_words
        return self.block_words[block]

    async def _fit(
        self, slot: Slot, key: TraceKey, ids: list[str], words: list[int], record: ParsedRecord
    ) -> Fit:
        """The words, in all, that bring the prompt to the record's input_length (a record
        with the same blocks and length as one before gets the same cut: the same prompt)."""
        tag, canary = block_tag(key, ids[0]), canary_of(self.key(slot))  # its first block opens it
        cut = self.cuts.get((tuple(ids), record.input_length))
        if cut is not None:
            prompt = _user(trace_content(key, ids, words, cut), tag, canary)
            return Fit(cut, prompt, await self.count(prompt.messages))
        tpw, whole = self.block_rate.tokens_per_word, sum(words)
        blocks = (len(ids) - 1) * self.spec.block_tokens - tpw * whole  # their tags' tokens
        rate = Rate(tpw, self.tail_tokens + blocks, measured=True)
        fit = await fit_filler(
            lambda n: _user(trace_content(key, ids, words, n), tag, canary),
            record.input_length,
            self.tokenizer,
            template_kwargs=self.template_kwargs,
            rate=rate,
            where=f"cell {self.cell.id} trace record {record.position}",
        )
        if fit.filler_words > whole:  # the cut fell in the last block: learn what it adds
            self.tail_tokens = fit.tokens.count - tpw * fit.filler_words - blocks
        self.cuts[(tuple(ids), record.input_length)] = fit.filler_words
        return fit

    def _reuse(self) -> Reuse:
        scored = sorted((r for r in self.rows if r.phase is not Phase.WARMUP),
                        key=lambda r: (r.at_ms, r.index))  # fmt: skip
        sent = [(self._row_ids(r), r.input_length) for r in scored]
        hits, total = offline_reuse(sent, self.spec.block_tokens)
        return Reuse(hit_tokens=hits, input_tokens=total, ratio=hits / total if total else None)

    def _row_ids(self, row: TraceRow) -> Sequence[str]:
        block = self.spec.block_tokens
        return block_ids(row.phase, row.position, row.hash_ids, row.input_length, block)


def _user(content: str, nonce: str, canary: str) -> Prompt:
    return Prompt(({"role": "user", "content": content},), nonce, canary, "prose")


def _row(slot: Slot, record: ParsedRecord) -> TraceRow:
    return TraceRow(
        phase=slot.phase,
        index=slot.index,
        position=record.position,
        at_ms=record.at_ms,
        input_length=record.input_length,
        output_length=record.output_length,
        hash_ids=list(record.hash_ids) if record.hash_ids is not None else None,
    )
