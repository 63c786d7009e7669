"""THE alias table: vLLM's Prometheus family names, across renames, to canonical names.

Guards and evidence speak only canonical names. Each entry lists the wire names
newest first; when a scrape carries more than one (vLLM emitted both during
deprecation windows) the newest wins and the sample records which one was read.
Wire names are written without the ``_total`` suffix: counters match with and
without it, and histograms match through their ``_sum``/``_count`` series.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Literal


class Kind(StrEnum):
    GAUGE = "gauge"
    COUNTER = "counter"
    HISTOGRAM = "histogram"
    INFO = "info"  # a constant-1 gauge whose labels are the information


@dataclass(frozen=True)
class Alias:
    canonical: str
    kind: Kind
    wire: tuple[str, ...]  # newest first, without a `_total` suffix
    combine: Literal["sum", "max"] = "sum"  # across series (one per engine of a DP lane)
    by_label: str | None = None  # a counter kept per value of this label
    keep_labels: tuple[str, ...] = ()  # labels an info family keeps (the raw scrape keeps all)
    expected: bool = True  # reported as missing from a scrape that lacks it


def _hist(name: str, *older: str) -> Alias:
    return Alias(name, Kind.HISTOGRAM, (f"vllm:{name}", *(f"vllm:{o}" for o in older)))


def _counter(name: str, *older: str, by_label: str | None = None, expected: bool = True) -> Alias:
    wire = (f"vllm:{name}", *(f"vllm:{o}" for o in older))
    return Alias(name, Kind.COUNTER, wire, by_label=by_label, expected=expected)


CACHE_CONFIG_LABELS = (
    "block_size",
    "num_gpu_blocks",
    "num_gpu_blocks_override",
    "kv_cache_size_tokens",
    "cache_dtype",
    "enable_prefix_caching",
    "gpu_memory_utilization",
    "kv_cache_memory_bytes",
)

VLLM_ALIASES: tuple[Alias, ...] = (
    Alias("num_requests_running", Kind.GAUGE, ("vllm:num_requests_running",)),
    Alias("num_requests_waiting", Kind.GAUGE, ("vllm:num_requests_waiting",)),
    # Renamed in the V1 engine; the worst engine of a data-parallel lane is the one that matters.
    Alias(
        "kv_cache_usage_perc",
        Kind.GAUGE,
        ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        combine="max",
    ),
    Alias(
        "cache_config_info",
        Kind.INFO,
        ("vllm:cache_config_info",),
        keep_labels=CACHE_CONFIG_LABELS,
    ),
    _counter("prompt_tokens"),
    _counter("generation_tokens"),
    _counter("request_success", by_label="finished_reason"),
    _counter("num_preemptions"),
    _counter("prefix_cache_queries", "gpu_prefix_cache_queries"),
    _counter("prefix_cache_hits", "gpu_prefix_cache_hits"),
    # Only an engine that decodes speculatively has these (vllm/v1/spec_decode/metrics.py).
    _counter("spec_decode_num_drafts", expected=False),
    _counter("spec_decode_num_draft_tokens", expected=False),
    _counter("spec_decode_num_accepted_tokens", expected=False),
    _counter("spec_decode_num_accepted_tokens_per_pos", by_label="position", expected=False),
    _hist("time_to_first_token_seconds"),
    _hist("inter_token_latency_seconds", "time_per_output_token_seconds"),
    _hist("e2e_request_latency_seconds"),
    _hist("request_queue_time_seconds"),
    _hist("request_prefill_time_seconds"),
    _hist("request_decode_time_seconds"),
    _hist("request_inference_time_seconds"),
    _hist("request_prompt_tokens"),
    _hist("request_generation_tokens"),
    # The API server's start time tells a lane restart from a counter that merely stalled.
    Alias(
        "process_start_time_seconds",
        Kind.GAUGE,
        ("process_start_time_seconds",),
        combine="max",
        expected=False,
    ),
)


@dataclass(frozen=True)
class AliasTable:
    """Lookup from wire name to alias; immutable, built once at the entry point."""

    aliases: tuple[Alias, ...]
    _by_wire: Mapping[str, Alias] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_wire: dict[str, Alias] = {}
        for alias in self.aliases:
            for wire in alias.wire:
                if wire in by_wire:
                    raise ValueError(f"wire name {wire!r} is claimed by two aliases")
                by_wire[wire] = alias
        object.__setattr__(self, "_by_wire", MappingProxyType(by_wire))

    def __iter__(self) -> Iterator[Alias]:
        return iter(self.aliases)

    def get(self, wire: str) -> Alias | None:
        return self._by_wire.get(wire)

    @property
    def expected(self) -> tuple[str, ...]:
        return tuple(a.canonical for a in self.aliases if a.expected)


def vllm_aliases() -> AliasTable:
    return AliasTable(VLLM_ALIASES)
