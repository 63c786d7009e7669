"""A dataset cell's plan: rows drawn from the user's file by the campaign seed.

Rows are drawn in a seeded order (a shuffle of the file's usable rows by campaign seed,
namespace, cell and phase; another shuffle each time the file is used up), never by the
arm. A row is left out (and counted) when its prompt is longer than the cell's
``input_tokens`` on the lane, when its prompt and output do not fit the lane's context, or
when the output comes from the row and it has no length. A request sends the row's
messages, the nonce first unless ``dataset.nonce = false``; its token target is its count
on the lane, its max_tokens the row's length (with ignore_eos) or the cell's sampling.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import Phase
from faceoff.formats.attempt.request_plan import DatasetRow, DatasetSource, PlannedRequest, Turn
from matrix.cell import Cell, Sampling
from matrix.sources import ParsedRow, dataset_rows, pinned_bytes
from matrix.traffic import Dataset
from workload.prompts import Prompt, canary_of, nonce_of
from workload.stream_layout import Slot
from workload.text import rng_for
from workload.tokenizer import TokenCount, Tokenizer
from workload.traffic.rows import dataset_messages, rebuilt_dataset
from workload.traffic.sourced import SourcedPlanner

EMPTY = ({"role": "user", "content": ""},)  # what an answer's turn costs without its text


class DatasetPlanner(SourcedPlanner):
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
        assert cell.dataset is not None, "a dataset cell has a dataset"
        self.spec: Dataset = cell.dataset
        data = pinned_bytes(Path(self.spec.file), self.spec.sha256, where=self.where(self.spec))
        self.parsed = dataset_rows(data, self.spec.format, where=self.spec.file)
        self.rows: list[DatasetRow] = []
        self.skipped = 0
        self.draws: dict[Phase, Iterator[int]] = {}

    @property
    def source(self) -> DatasetSource:
        spec = self.spec
        return DatasetSource(file=spec.file, sha256=spec.sha256, format=spec.format,
                             nonce=spec.nonce, skipped=self.skipped, rows=self.rows)  # fmt: skip

    async def plan_all(self, slots: list[Slot]) -> list[PlannedRequest]:
        return [await self.plan(slot) for slot in slots]

    async def plan(self, slot: Slot) -> PlannedRequest:
        key = self.key(slot)
        nonce = nonce_of(key) if self.spec.nonce else None
        for _ in range(len(self.parsed)):  # one pass over the file at most
            parsed = self.parsed[next(self._draws(slot.phase))]
            drawn = await self._row(slot, parsed, nonce)
            if drawn is not None:
                return self._request(slot, *drawn, nonce)
            self.skipped += 1
        raise FaceoffError(
            f"no row of the dataset fits: every one of its {len(self.parsed)} usable rows is "
            f"longer than input_tokens = {self.cell.input_tokens}, beyond the lane's context, "
            "or without an output length",
            where=self.where(self.spec),
            fix="raise input_tokens, or set dataset.output = 'cell' when rows give no length",
        )

    def _draws(self, phase: Phase) -> Iterator[int]:
        if phase not in self.draws:
            self.draws[phase] = self._order(phase)
        return self.draws[phase]

    def _order(self, phase: Phase) -> Iterator[int]:
        cycle = 0
        while True:
            order = list(range(len(self.parsed)))
            key = (self.seed, self.namespace, self.cell.prompt_id, phase.value, "rows", cycle)
            rng_for(*key).shuffle(order)
            yield from order
            cycle += 1

    async def _row(
        self, slot: Slot, parsed: ParsedRow, nonce: str | None
    ) -> tuple[DatasetRow, TokenCount] | None:
        turns = [Turn.model_validate({"role": r, "content": c}) for r, c in parsed.messages]
        row = DatasetRow(phase=slot.phase, index=slot.index, position=parsed.position,
                         messages=turns, prompt_tokens=0, output_tokens=None)  # fmt: skip
        tokens = await self.count(dataset_messages(row, nonce))
        output = await self._output(parsed) if self.spec.output == "row" else None
        if tokens.count > self.cell.input_tokens or (self.spec.output == "row" and not output):
            return None
        row = row.model_copy(update={"prompt_tokens": tokens.count, "output_tokens": output})
        max_tokens = rebuilt_dataset(row, nonce, self.sampling.max_tokens).max_tokens
        if not self.fits(tokens.count, max_tokens or self.sampling.max_tokens):
            return None
        return row, tokens

    async def _output(self, parsed: ParsedRow) -> int | None:
        """The row's output length: given, else its reference answer's tokens on the lane."""
        if parsed.output_tokens is not None or parsed.answer is None:
            return parsed.output_tokens
        answer = await self.count(({"role": "user", "content": parsed.answer},))
        return max(1, answer.count - (await self.count(EMPTY)).count)

    def _request(
        self, slot: Slot, row: DatasetRow, tokens: TokenCount, nonce: str | None
    ) -> PlannedRequest:
        self.rows.append(row)
        key = self.key(slot)
        messages = tuple(dataset_messages(row, nonce))
        prompt = Prompt(messages, nonce or "", canary_of(key), "prose")
        rebuilt = rebuilt_dataset(row, nonce, self.sampling.max_tokens)
        return self.request(
            slot,
            prompt,
            tokens,
            target=row.prompt_tokens,
            filler_words=0,
            max_tokens=rebuilt.max_tokens or self.sampling.max_tokens,
            ignore_eos=rebuilt.max_tokens is not None or self.sampling.ignore_eos,
        )
