"""What ``comparison.json`` quotes of an arm's engine from its own output: the boot log's
memory report (``evidence.folder.bootfacts`` reads it), the cold start of its first
warmup (``evidence.attempt.cold_start``) and a cell's speculative-decoding acceptance
(``collectors.speculation``, from the engine's counters)."""

from __future__ import annotations

from pydantic import Field

from faceoff.artifact import Spec


class BootFacts(Spec):
    model_load_gib: float | None = Field(description="'Model loading took N GiB', last seen.")
    kv_cache_gib: float | None = Field(description="'Available KV cache memory: N GiB', last seen.")
    kv_cache_tokens: int | None = Field(
        description="'<device> KV cache size: N tokens' (GPU, CPU, …), last seen."
    )


class ColdStart(Spec):
    lane_run: str = Field(description="lanes/<arm>/<run> whose warmups are read.")
    first_ttft_s: float = Field(description="TTFT of the first warmup after the start.")
    warm_ttft_p50_s: float | None = Field(description="Median TTFT of the later warmups.")
    warm_n: int = Field(description="Later warmups with a TTFT.")
    source: str = Field(description="The warmup journal, relative to the bundle.")


class SpecAcceptance(Spec):
    drafts: float = Field(description="Drafts over the cell (steps × requests with drafts).")
    draft_tokens: float = Field(description="Draft tokens proposed over the cell.")
    accepted_tokens: float = Field(description="Of those, accepted by the target model.")
    acceptance_rate: float | None = Field(description="accepted / draft tokens.")
    mean_acceptance_length: float | None = Field(
        description="1 + accepted / drafts: tokens per verified step, bonus token included."
    )
    per_position: list[float] = Field(
        description="Accepted at draft position i / drafts, from position 0."
    )
    exact: bool = Field(description="Every counter's delta is exact.")
    why_inexact: str | None = Field(description="Why not, when not.")
