"""The request plan of a cell run, built against the running lane's own ``/tokenize``.

The first arm of a cell to run (the incumbent, normally) searches the prompt
texts on its tokenizer; every later arm gets the same texts retokenized by its own
lane, so the pair guard compares what each engine really prefilled. Arm warmups
are a plan too: every request in the warmup phase, never scored.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import Phase
from faceoff.formats.attempt.request_plan import PlanOptions, RequestPlan
from matrix.arm import Arm
from matrix.arrival import Arrival
from matrix.cell import Cell, WorkloadKind, sampling_for
from matrix.slo import Slo
from workload.plan import build_plan, retokenize
from workload.tokenizer import LaneTokenizer

TOKENIZE_TIMEOUT_S = 60.0
# Kinds whose request pattern (several streams, conversations, a search) warmups do not have.
PATTERNLESS = {
    WorkloadKind.HEAD_OF_LINE: WorkloadKind.NATURAL,
    WorkloadKind.SESSION_REUSE: WorkloadKind.NATURAL,
    WorkloadKind.AGENTIC: WorkloadKind.NATURAL,
    WorkloadKind.NEEDLE_SEARCH: WorkloadKind.NEEDLE,
    WorkloadKind.TRACE: WorkloadKind.NATURAL,
}


@dataclass(frozen=True)
class PlanTarget:
    """Where a plan is built: an arm's running lane, and the prompts' seed and namespace."""

    arm: Arm
    base_url: str
    seed: int
    namespace: str


def plan_cell(
    cell: Cell, target: PlanTarget, *, reference: RequestPlan | None, slo: Slo | None = None
) -> RequestPlan:
    """Build the plan on this lane, or retokenize ``reference`` (another arm's plan)."""
    return asyncio.run(_plan(cell, target, reference=reference, slo=slo))


def plan_warmups(cell: Cell, target: PlanTarget) -> RequestPlan:
    """``arm.warmups`` requests shaped like ``cell``, all in the warmup phase, one stream.

    Give them a namespace of their own: their nonces then differ from every scored
    and cell-warmup prompt, so they cannot warm the prefix cache for a cell.
    """
    options = PlanOptions(scored_phase=Phase.WARMUP)
    shaped = warmup_shape(cell, target.arm.warmups)
    return asyncio.run(_plan(shaped, target, options=options))


def plan_diagnostic(
    cell: Cell, target: PlanTarget, *, reference: RequestPlan | None
) -> RequestPlan:
    """One request of ``cell``'s prompts in the diagnostic phase (journaled, never scored),
    shaped as one independent request like a warmup; ``reference``: another arm's, which
    this lane retokenizes, so both arms send the same text."""
    options = PlanOptions(scored_phase=Phase.DIAGNOSTIC)
    shaped = warmup_shape(cell, 1)
    return asyncio.run(_plan(shaped, target, reference=reference, options=options))


def warmup_shape(cell: Cell, warmups: int) -> Cell:
    """``cell`` as ``warmups`` independent requests on one stream, validated.

    Warmups have no head-of-line or session pattern, so a kind whose pattern needs
    several streams or whole sessions warms up as natural requests of its input and
    sampling; a copy that kept the kind would fail that kind's shape checks. They are
    closed loop whatever the cell's arrival: a warmup has no schedule to keep. A needle
    search warms up as needles of its low end, the length it expects to recall; a trace as
    natural requests of its longest input (a dataset keeps its rows: they are independent).
    """
    kind = PATTERNLESS.get(cell.kind, cell.kind)
    fields = cell.model_dump()
    fields |= {"kind": kind, "requests": warmups, "warmups": 0, "concurrency": 1}
    fields |= {"arrival": Arrival.CLOSED, "rate": None, "sweep": None}
    fields |= {"search": None, "agentic": None, "trace": None, "ramp": None, "burstiness": None}
    if cell.search is not None:
        fields["input_tokens"] = cell.search.low
    fields.pop("arms", None)
    return Cell.model_validate(fields)


async def _plan(
    cell: Cell,
    target: PlanTarget,
    *,
    reference: RequestPlan | None = None,
    options: PlanOptions | None = None,
    slo: Slo | None = None,
) -> RequestPlan:
    arm = target.arm
    timeout = aiohttp.ClientTimeout(total=TOKENIZE_TIMEOUT_S)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session:
            tokenizer = LaneTokenizer(session, target.base_url, arm.served_model)
            sampling = sampling_for(cell, arm.name)
            # a needle search plans no request to retokenize: each lane measures its own
            if reference is not None and cell.search is None:
                return await retokenize(
                    reference,
                    tokenizer,
                    model=arm.served_model,
                    sampling=sampling if cell.variants else None,
                )
            return await build_plan(
                cell,
                seed=target.seed,
                namespace=target.namespace,
                model=arm.served_model,
                tokenizer=tokenizer,
                options=options,
                slo=slo,
                sampling=sampling,
            )
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise FaceoffError(
            f"could not tokenize the prompts of cell {cell.id} on the lane: {exc!r}",
            where=f"{target.base_url}/tokenize",
            fix="check that the lane is still running and serves /tokenize",
        ) from exc


def reference_plan(newest_first: list[Path]) -> RequestPlan | None:
    """The plan to retokenize: the first that exists among earlier arms' attempts."""
    for path in newest_first:
        if path.is_file():
            return RequestPlan.read(path)
    return None


def plan_pilot(cell: Cell, target: PlanTarget) -> RequestPlan:
    """One request of ``cell``'s contract in the pilot phase (journaled, never scored): its
    own prompts (the phase is part of every derivation, so they warm no cell's prefix), as
    one independent request like a warmup, at the cell's largest input (an agentic cell's
    last turn, as one request)."""
    options = PlanOptions(scored_phase=Phase.PILOT)
    shaped = warmup_shape(cell, 1)
    if cell.agentic is not None:
        shaped = shaped.model_copy(update={"input_tokens": cell.peak_input_tokens})
    return asyncio.run(_plan(shaped, target, options=options))
