"""Plans built against a running lane, for callers without an event loop (the flow).

plan = plan_on_lane(cell, seed=…, namespace=…, model=arm.served_model, base_url=url)
twin = retokenize_on_lane(plan, base_url=candidate_url)   # same text, its own vectors
"""

from __future__ import annotations

import asyncio

import aiohttp

from matrix.model import Cell
from workload.plan import PlanOptions, RequestPlan, build_plan, retokenize
from workload.tokenizer import LaneTokenizer

TOKENIZE_TIMEOUT = aiohttp.ClientTimeout(total=600)  # a 300K-token prompt takes seconds


def plan_on_lane(
    cell: Cell,
    *,
    seed: int,
    namespace: str,
    model: str,
    base_url: str,
    options: PlanOptions | None = None,
) -> RequestPlan:
    """The cell's request plan, token targets searched on this lane's /tokenize."""

    async def build() -> RequestPlan:
        async with aiohttp.ClientSession(timeout=TOKENIZE_TIMEOUT) as session:
            tokenizer = LaneTokenizer(session, base_url, model)
            return await build_plan(
                cell,
                seed=seed,
                namespace=namespace,
                model=model,
                tokenizer=tokenizer,
                options=options,
            )

    return asyncio.run(build())


def retokenize_on_lane(
    plan: RequestPlan, *, base_url: str, model: str | None = None
) -> RequestPlan:
    """``plan``'s exact texts, counted and hashed by another lane (the pair's twin)."""

    async def count() -> RequestPlan:
        async with aiohttp.ClientSession(timeout=TOKENIZE_TIMEOUT) as session:
            tokenizer = LaneTokenizer(session, base_url, model or plan.model)
            return await retokenize(plan, tokenizer, model=model)

    return asyncio.run(count())
