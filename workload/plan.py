"""The request plan of a cell (``requests.json``): the exact requests, in order, hashed.

The text is a function of (campaign seed, prompt namespace, cell, phase, index) and of
the filler length that hits the token target on the lane's tokenizer. Build it on the
incumbent with :func:`build_plan`; give a candidate the *same text* with
:func:`retokenize`, which records the candidate lane's own token vector, so the pair
guard compares what each engine really prefilled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Protocol

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import Phase, RequestRole, turn_of
from faceoff.formats.attempt.request_plan import (
    DatasetSource,
    OpenLoad,
    PlannedRequest,
    PlanOptions,
    RequestPlan,
    TraceSource,
)
from matrix.cell import Cell, Sampling, WorkloadKind
from matrix.slo import Slo
from workload.agentic import opening, tool_turn
from workload.fit import Fit, Rate, fit_filler
from workload.prompts import Message, Prompt, PromptKey, compose, follow_up
from workload.request import Body, chat_template_kwargs, planned_request, sent_for
from workload.schedule import open_load, step_arrivals
from workload.stream_layout import Slot, layout
from workload.tokenizer import TokenCount, Tokenizer, fingerprint, shared_by_all
from workload.traffic.dataset import DatasetPlanner
from workload.traffic.prefix import SharedPrefixes, with_prefix
from workload.traffic.trace import TracePlanner

__all__ = [  # the request models are read from here too
    "Body", "build_plan", "chat_template_kwargs", "retokenize",
]  # fmt: skip

PREFIX_PROBE_WORDS = 32  # a short document: only the prompts' common start matters
RETOKENIZE_IN_FLIGHT = 4  # /tokenize calls a retokenize keeps open at once


async def build_plan(
    cell: Cell,
    *,
    seed: int,
    namespace: str,
    model: str,
    tokenizer: Tokenizer,
    options: PlanOptions | None = None,
    slo: Slo | None = None,
    sampling: Sampling | None = None,
) -> RequestPlan:
    """Search each request's filler length against the lane's tokenizer and hash it all.

    An open-loop cell's scored requests also get their step and seeded arrival, and the
    plan its ``load`` with ``slo`` (the SLO the cell is judged by) for a sweep's steps.
    ``sampling``: what this arm sends, where the cell declares variants (default the cell's).
    """
    options = options or PlanOptions()
    slots = layout(
        cell,
        scored_phase=options.scored_phase,
        short_input_tokens=options.short_input_tokens,
        hol_delay_ms=options.hol_delay_ms,
    )
    planner = _planner(cell, seed, namespace, model, tokenizer, sampling or cell.sampling)
    # the fingerprint's small round trip is asked while the search runs
    requests, tokenizer_fingerprint = await asyncio.gather(
        planner.plan_all(slots), fingerprint(tokenizer)
    )
    load = open_load(cell, slo, trace_rate=planner.trace_rate)
    if load is not None:
        requests = _scheduled(requests, load, planner.arrivals(load))
    return RequestPlan(
        cell=cell,
        seed=seed,
        namespace=namespace,
        model=model,
        tokenizer_fingerprint=tokenizer_fingerprint,
        max_model_len=planner.max_model_len,
        options=options,
        requests=requests,
        load=load,
        shared_prefix_tokens=await planner.shared_prefix_tokens(),
        source=planner.source,
    )


class Planner(Protocol):
    """What builds a cell's requests on one lane: synthetic prompts, or a file's rows."""

    max_model_len: int | None
    trace_rate: float | None

    @property
    def source(self) -> DatasetSource | TraceSource | None: ...

    async def plan_all(self, slots: list[Slot]) -> list[PlannedRequest]: ...

    async def shared_prefix_tokens(self) -> int | None: ...

    def arrivals(self, load: OpenLoad) -> list[float]: ...


def _planner(  # noqa: PLR0917  (the plan's identity, one argument each)
    cell: Cell, seed: int, namespace: str, model: str, tokenizer: Tokenizer, sampling: Sampling
) -> Planner:
    kinds: dict[WorkloadKind, type[DatasetPlanner | TracePlanner]] = {
        WorkloadKind.DATASET: DatasetPlanner,
        WorkloadKind.TRACE: TracePlanner,
    }
    return kinds.get(cell.kind, _Planner)(cell, seed, namespace, model, tokenizer, sampling)


def _scheduled(
    requests: list[PlannedRequest], load: OpenLoad, arrivals: list[float]
) -> list[PlannedRequest]:
    """The non-warmup requests with their step and unit-rate arrival, in index order."""
    return [
        request
        if request.phase is Phase.WARMUP
        else request.model_copy(
            update={
                "step": request.index // load.requests_per_step,
                "arrival_s": arrivals[request.index],
            }
        )
        for request in requests
    ]


async def retokenize(
    plan: RequestPlan,
    tokenizer: Tokenizer,
    *,
    model: str | None = None,
    sampling: Sampling | None = None,
) -> RequestPlan:
    """The same texts, counted and hashed by another lane's tokenizer.

    ``sampling``: this arm's, where the cell declares variants: its reasoning effort is
    sent (and tokenized) instead of the reference plan's; None keeps the reference's.
    """
    model = model or plan.model
    texts = [
        planned.model_copy(update={"reasoning_effort": sampling.reasoning_effort})
        if sampling is not None
        else planned
        for planned in plan.requests
    ]
    # every text is known: the round trips overlap, a few at a time (a lane's /tokenize
    # is one server; a request queued behind many others would wait out its timeout)
    in_flight = asyncio.Semaphore(RETOKENIZE_IN_FLIGHT)

    async def count(request: PlannedRequest) -> TokenCount:
        async with in_flight:
            messages = [m.model_dump() for m in request.messages]
            return await tokenizer.tokenize(
                messages, chat_template_kwargs(request.reasoning_effort)
            )

    fingerprinted, counts = await asyncio.gather(
        fingerprint(tokenizer), asyncio.gather(*(count(r) for r in texts))
    )
    return plan.model_copy(
        update={
            "model": model,
            "tokenizer_fingerprint": fingerprinted,
            # a plan without requests (a needle search's) keeps its own
            "max_model_len": counts[-1].max_model_len if counts else plan.max_model_len,
            "requests": [
                _rehashed(r, tokens, model) for r, tokens in zip(texts, counts, strict=True)
            ],
            "shared_prefix_tokens": shared_by_all([tokens.tokens for tokens in counts]),
        }
    )


class _Planner:
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
        self.rates: dict[tuple[str, RequestRole], Rate] = {}
        self.fits: dict[tuple[Phase, int], Fit] = {}
        self.max_model_len: int | None = None
        self.prefixes = (
            SharedPrefixes(cell.prefix, tokenizer, self.template_kwargs) if cell.prefix else None
        )

    trace_rate: float | None = None
    source: None = None  # synthetic prompts: no file

    async def shared_prefix_tokens(self) -> int | None:
        return await self.probe_prefix() if self.cell.search is not None else self.shared_prefix()

    def arrivals(self, load: OpenLoad) -> list[float]:
        return step_arrivals(load, self.seed, self.namespace, self.cell.prompt_id)

    async def plan_all(self, slots: list[Slot]) -> list[PlannedRequest]:
        """In order: a request learns from the ones before it (rate, turn 1)."""
        return [await self.plan(slot) for slot in slots]

    async def plan(self, slot: Slot) -> PlannedRequest:
        key = PromptKey(self.seed, self.namespace, self.cell.prompt_id, slot.phase, slot.index)
        agentic = self.cell.agentic if self.cell.kind is WorkloadKind.AGENTIC else None
        if agentic is not None and (turn_of(slot.role) or 1) > 1:
            fit, target = await self._tool_turn(slot, key, agentic.tool_result_tokens)
        elif slot.role is RequestRole.TURN_2:
            fit, target = await self._follow_up(slot, key)
        else:
            fit, target = await self._fit(slot, key), slot.target_tokens
        self.fits[(slot.phase, slot.index)] = fit
        self._check_context(fit.tokens, slot)
        return self._request(slot, key, fit, target)

    async def _fit(self, slot: Slot, key: PromptKey) -> Fit:
        compose_one = self._composer(slot, key)
        if self.prefixes is not None:  # the group's system prompt opens the request
            system = await self.prefixes.message(key)
            compose_one = _opened(system, compose_one)
        return await fit_filler(
            compose_one,
            slot.target_tokens,
            self.tokenizer,
            template_kwargs=self.template_kwargs,
            rate=self.rates.setdefault((self.cell.kind.value, slot.role), Rate()),
            where=f"cell {self.cell.id} {slot.phase.value} request {slot.index}",
        )

    def _composer(self, slot: Slot, key: PromptKey) -> Callable[[int], Prompt]:
        if self.cell.kind is WorkloadKind.AGENTIC:  # its warmups open conversations too
            return lambda n: opening(key, n)
        return lambda n: compose(self.cell, key, slot.role, n)

    async def _tool_turn(self, slot: Slot, key: PromptKey, result_tokens: int) -> tuple[Fit, int]:
        """An agentic turn after the first: the previous turn's context, a tool call and a
        tool result searched to ``result_tokens``; its target is what that adds up to."""
        previous = self.fits[(slot.phase, slot.index - 1)].prompt
        build = partial(tool_turn, previous, key)
        bare = await self.tokenizer.tokenize(build(0).messages, self.template_kwargs)
        target = bare.count + result_tokens
        rate = self.rates.setdefault((self.cell.kind.value, slot.role), Rate())
        rate.scaffold_tokens = bare.count  # the context so far is this turn's scaffold
        fit = await fit_filler(
            build,
            target,
            self.tokenizer,
            template_kwargs=self.template_kwargs,
            rate=rate,
            where=f"cell {self.cell.id} {slot.phase.value} request {slot.index}",
        )
        return fit, target

    async def _follow_up(self, slot: Slot, key: PromptKey) -> tuple[Fit, int]:
        """Turn 2 and its target: turn 1's target plus what the second turn adds."""
        first = self.fits[(slot.phase, slot.index - 1)]
        prompt = follow_up(first.prompt, key)
        tokens = await self.tokenizer.tokenize(prompt.messages, self.template_kwargs)
        target = slot.target_tokens + tokens.count - first.tokens.count
        return Fit(first.filler_words, prompt, tokens), target

    def shared_prefix(self) -> int | None:
        return shared_by_all([fit.tokens.tokens for fit in self.fits.values()])

    async def probe_prefix(self) -> int | None:
        """What any two probes of a needle search share on this lane (its client plans
        them; they share the chat template's preamble and the nonce's '['), measured on
        two short probes keyed as the client keys them."""
        needle = self.cell.model_copy(update={"kind": WorkloadKind.NEEDLE, "search": None})
        vectors = []
        for probe in (0, 1):
            namespace = f"{self.namespace}:probe-{probe}"
            key = PromptKey(self.seed, namespace, self.cell.prompt_id, Phase.PROBE, 0)
            prompt = compose(needle, key, RequestRole.SINGLE, PREFIX_PROBE_WORDS)
            tokens = await self.tokenizer.tokenize(prompt.messages, self.template_kwargs)
            vectors.append(tokens.tokens)
        return shared_by_all(vectors)

    def _check_context(self, tokens: TokenCount, slot: Slot) -> None:
        self.max_model_len = tokens.max_model_len
        if tokens.max_model_len is not None and tokens.count > tokens.max_model_len:
            raise FaceoffError(
                f"{slot.phase.value} request {slot.index} needs {tokens.count} prompt tokens; "
                f"the lane's max_model_len is {tokens.max_model_len}",
                where=f"cell {self.cell.id}",
                fix="lower input_tokens or raise the lane's --max-model-len",
            )

    def _request(self, slot: Slot, key: PromptKey, fit: Fit, target: int) -> PlannedRequest:
        probe = self.cell.kind is WorkloadKind.PREFILL_PROBE
        sampling = self.sampling
        max_tokens = 1 if probe else sampling.max_tokens
        sent = sent_for(sampling, key, max_tokens=max_tokens, ignore_eos=sampling.ignore_eos)
        return planned_request(
            slot, fit.prompt, fit.tokens, sent, model=self.model, target=target,
            filler_words=fit.filler_words,
        )  # fmt: skip


def _rehashed(request: PlannedRequest, tokens: TokenCount, model: str) -> PlannedRequest:
    """The same request counted by another lane's tokenizer for its model, validated anew."""
    return PlannedRequest.model_validate(
        request.model_dump() | Body.of(request).hashes(tokens, model)
    )


def _opened(system: Message, compose_one: Callable[[int], Prompt]) -> Callable[[int], Prompt]:
    return lambda n: with_prefix(system, compose_one(n))
