"""``comparison.json``'s ``reuse`` of a dataset or trace cell: the prefix reuse its plan
expected beside each arm's measured prefix-cache hit ratio (``evidence.comparison.reuse``
builds it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from faceoff.artifact import Spec


class ArmHits(Spec):
    arm: str = Field(description="Arm name.")
    ratio: float | None = Field(
        description="prefix_cache_hits / prefix_cache_queries deltas over the cell; None where "
        "the arm did not run it or either counter is missing or not exact."
    )
    hits: float | None = Field(description="prefix_cache_hits delta over the cell (tokens).")
    queries: float | None = Field(description="prefix_cache_queries delta over the cell (tokens).")


class PrefixReuse(Spec):
    source: Literal["dataset", "trace"] = Field(description="What the cell's prompts come from.")
    expected: float | None = Field(
        description="Reuse the plan computed offline from the trace's hash_ids (source.reuse "
        "of requests.json); None for a dataset, whose plan computes none."
    )
    hit_tokens: int | None = Field(description="Prompt tokens an earlier scored record computed.")
    input_tokens: int | None = Field(description="Prompt tokens of the scored records.")
    arms: list[ArmHits] = Field(description="Each arm's measured hit ratio, in arm order.")
    sources: list[str] = Field(description="The requests.json and telemetry.json files read.")
