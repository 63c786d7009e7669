"""What the planners of file-sourced cells share: the lane's counts, the context, the request.

A dataset cell (``workload.traffic.dataset``) and a trace cell (``workload.traffic.trace``) plan
their requests from a file's rows instead of searched filler text; both count every prompt
on the lane's ``/tokenize``, refuse a request the lane's context cannot hold, and record
the rows in the plan (``workload.traffic.rows``). Their other arm retokenizes the plan as
any other (``workload.plan.retokenize``): the same rows, texts and schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.request_plan import OpenLoad, PlannedRequest
from matrix.cell import Cell, Sampling, WorkloadKind
from matrix.traffic import SourceFile
from workload.prompts import Message, Prompt, PromptKey
from workload.request import chat_template_kwargs, planned_request, sent_for
from workload.schedule import step_arrivals
from workload.stream_layout import Slot
from workload.tokenizer import TokenCount, Tokenizer, shared_by_all

SOURCED = frozenset({WorkloadKind.DATASET, WorkloadKind.TRACE})


class SourcedPlanner:
    """The part of a planner that does not depend on the file's format."""

    trace_rate: float | None = None  # a trace's mean rate; others are seeded at the cell's

    def __init__(  # noqa: PLR0917  (the plan's identity, one argument each)
        self,
        cell: Cell,
        seed: int,
        namespace: str,
        model: str,
        tokenizer: Tokenizer,
        sampling: Sampling,
    ) -> None:
        self.cell, self.seed, self.namespace, self.model = cell, seed, namespace, model
        self.tokenizer, self.sampling = tokenizer, sampling
        self.template_kwargs = chat_template_kwargs(sampling.reasoning_effort)
        self.max_model_len: int | None = None
        self.vectors: list[tuple[int, ...]] = []

    def where(self, source: SourceFile) -> str:
        return f"cell {self.cell.id}: {Path(source.file).name}"

    def key(self, slot: Slot) -> PromptKey:
        return PromptKey(self.seed, self.namespace, self.cell.prompt_id, slot.phase, slot.index)

    async def count(self, messages: Sequence[Message]) -> TokenCount:
        tokens = await self.tokenizer.tokenize(messages, self.template_kwargs)
        self.max_model_len = tokens.max_model_len
        return tokens

    def fits(self, prompt_tokens: int, max_tokens: int) -> bool:
        """Whether the lane's context holds the prompt and the output it asks for."""
        limit = self.max_model_len
        return limit is None or prompt_tokens + max_tokens <= limit

    def refuse(self, what: str, prompt_tokens: int, max_tokens: int) -> FaceoffError:
        return FaceoffError(
            f"{what} needs {prompt_tokens} prompt and {max_tokens} output tokens; the lane's "
            f"max_model_len is {self.max_model_len}",
            where=f"cell {self.cell.id}",
            fix="replay fewer records, filter the file, lower sampling.max_tokens or raise the "
            "lane's --max-model-len",
        )

    def request(
        self,
        slot: Slot,
        prompt: Prompt,
        tokens: TokenCount,
        *,
        target: int,
        filler_words: int,
        max_tokens: int,
        ignore_eos: bool,
    ) -> PlannedRequest:
        self.vectors.append(tokens.tokens)
        sent = sent_for(self.sampling, self.key(slot), max_tokens=max_tokens, ignore_eos=ignore_eos)
        return planned_request(
            slot, prompt, tokens, sent, model=self.model, target=target, filler_words=filler_words
        )

    async def shared_prefix_tokens(self) -> int | None:
        return shared_by_all(self.vectors)

    def arrivals(self, load: OpenLoad) -> list[float]:
        """Every scored request's unit-rate offset: seeded, as any open-loop cell's."""
        return step_arrivals(load, self.seed, self.namespace, self.cell.prompt_id)
