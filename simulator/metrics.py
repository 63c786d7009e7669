"""``/metrics``: vLLM V1's Prometheus families, names, labels and bucket edges.

Every ``vllm:`` series carries ``engine="0"`` and ``model_name``; counters are
exposed as ``*_total`` by ``prometheus_client`` itself. Engine times are the real
(scaled) times the server observed, so they agree with what a client measures.
With ``legacy`` the names older vLLM releases used are exposed instead (see
``LEGACY_RENAMES``) and ``vllm:`` counters are written the pre-``_total`` way
(``vllm:prompt_tokens 52.0``), so an alias table can be tested against both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

from simulator.profile import Profile

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
               5.0, 7.5, 10.0, 20.0, 40.0, 80.0)  # fmt: skip
LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
                   50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
ITERATION_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
N_BUCKETS = (1, 2, 5, 10, 20)
PREEMPTION_BUCKETS = (1, 2, 3, 4, 5, 10, 20)
TOKENS = ()  # placeholder: 1-2-5 buckets up to max_model_len
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")
LABELS = ("engine", "model_name")
LEGACY_RENAMES = {
    "vllm:kv_cache_usage_perc": "vllm:gpu_cache_usage_perc",
    "vllm:prefix_cache_queries": "vllm:gpu_prefix_cache_queries",
    "vllm:prefix_cache_hits": "vllm:gpu_prefix_cache_hits",
    "vllm:inter_token_latency_seconds": "vllm:time_per_output_token_seconds",
}

# (attribute, family, help, extra labels)
GAUGES = (
    ("running", "vllm:num_requests_running", "Number of requests in model execution batches.", ()),
    ("waiting", "vllm:num_requests_waiting", "Number of requests waiting to be processed.", ()),
    ("waiting_by_reason", "vllm:num_requests_waiting_by_reason",
     "Number of waiting requests by reason.", ("reason",)),
    ("sleep_state", "vllm:engine_sleep_state", "Engine sleep state.", ("sleep_state",)),
    ("kv_usage", "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", ()),
)  # fmt: skip
COUNTERS = (
    ("flops", "vllm:estimated_flops_per_gpu", "Estimated floating point operations per GPU.", ()),
    ("read_bytes", "vllm:estimated_read_bytes_per_gpu", "Estimated bytes read per GPU.", ()),
    ("write_bytes", "vllm:estimated_write_bytes_per_gpu", "Estimated bytes written per GPU.", ()),
    ("prefix_queries", "vllm:prefix_cache_queries",
     "Prefix cache queries, in terms of number of queried tokens.", ()),
    ("prefix_hits", "vllm:prefix_cache_hits",
     "Prefix cache hits, in terms of number of cached tokens.", ()),
    ("external_queries", "vllm:external_prefix_cache_queries",
     "External prefix cache queries, in terms of number of queried tokens.", ()),
    ("external_hits", "vllm:external_prefix_cache_hits",
     "External prefix cache hits, in terms of number of cached tokens.", ()),
    ("mm_queries", "vllm:mm_cache_queries", "Multi-modal cache queries.", ()),
    ("mm_hits", "vllm:mm_cache_hits", "Multi-modal cache hits.", ()),
    ("preemptions", "vllm:num_preemptions", "Cumulative number of preemption from the engine.", ()),
    ("prompt_tokens", "vllm:prompt_tokens", "Number of prefill tokens processed.", ()),
    ("prompt_by_source", "vllm:prompt_tokens_by_source", "Number of prompt tokens by source.",
     ("source",)),
    ("prompt_cached", "vllm:prompt_tokens_cached",
     "Number of cached prompt tokens (local + external).", ()),
    ("cached_by_source", "vllm:prompt_tokens_cached_by_source",
     "Prefix-cache hit tokens by the cache tier that supplied them.", ("source",)),
    ("generation_tokens", "vllm:generation_tokens", "Number of generation tokens processed.", ()),
    ("success", "vllm:request_success", "Count of successfully processed requests.",
     ("finished_reason",)),
)  # fmt: skip
SPEC_COUNTERS = (
    ("drafts", "vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", ()),
    ("draft_tokens", "vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", ()),
    ("accepted", "vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", ()),
    ("accepted_per_pos", "vllm:spec_decode_num_accepted_tokens_per_pos",
     "Accepted tokens per draft position.", ("position",)),
)  # fmt: skip
HISTOGRAMS = (
    ("h_prompt", "vllm:request_prompt_tokens", "Number of prefill tokens processed.", TOKENS),
    ("h_generation", "vllm:request_generation_tokens",
     "Number of generation tokens processed.", TOKENS),
    ("h_iteration", "vllm:iteration_tokens_total",
     "Histogram of number of tokens per engine_step.", ITERATION_BUCKETS),
    ("h_max_generation", "vllm:request_max_num_generation_tokens",
     "Histogram of maximum number of requested generation tokens.", TOKENS),
    ("h_n", "vllm:request_params_n", "Histogram of the n request parameter.", N_BUCKETS),
    ("h_max_tokens", "vllm:request_params_max_tokens",
     "Histogram of the max_tokens request parameter.", TOKENS),
    ("h_ttft", "vllm:time_to_first_token_seconds",
     "Histogram of time to first token in seconds.", TTFT_BUCKETS),
    ("h_itl", "vllm:inter_token_latency_seconds",
     "Histogram of inter-token latency in seconds.", ITL_BUCKETS),
    ("h_tpot", "vllm:request_time_per_output_token_seconds",
     "Histogram of time_per_output_token_seconds per request.", ITL_BUCKETS),
    ("h_e2e", "vllm:e2e_request_latency_seconds",
     "Histogram of e2e request latency in seconds.", LATENCY_BUCKETS),
    ("h_queue", "vllm:request_queue_time_seconds",
     "Histogram of time spent in WAITING phase for request.", LATENCY_BUCKETS),
    ("h_inference", "vllm:request_inference_time_seconds",
     "Histogram of time spent in RUNNING phase for request.", LATENCY_BUCKETS),
    ("h_prefill", "vllm:request_prefill_time_seconds",
     "Histogram of time spent in PREFILL phase for request.", LATENCY_BUCKETS),
    ("h_decode", "vllm:request_decode_time_seconds",
     "Histogram of time spent in DECODE phase for request.", LATENCY_BUCKETS),
    ("h_preemptions", "vllm:request_num_preemptions",
     "Histogram of the number of times a request was preempted.", PREEMPTION_BUCKETS),
    ("h_kv_computed", "vllm:request_prefill_kv_computed_tokens",
     "Histogram of new KV tokens computed during prefill (excluding cached tokens).", TOKENS),
)  # fmt: skip
LABEL_VALUES = {
    "waiting_by_reason": ("reason", ("capacity", "deferred")),
    "prompt_by_source": ("source", ("local_compute", "local_cache_hit", "external_kv_transfer")),
    "cached_by_source": ("source", ("device", "host", "p2p", "disk", "external_unspecified")),
    "success": ("finished_reason", FINISH_REASONS),
    "sleep_state": ("sleep_state", ("awake", "weights_offloaded", "discard_all")),
}


def buckets_1_2_5(limit: int) -> tuple[int, ...]:
    """vLLM's token-count buckets: 1, 2, 5, 10, 20, 50, … up to ``limit``."""
    out: list[int] = []
    scale = 1
    while True:
        for mantissa in (1, 2, 5):
            if mantissa * scale > limit:
                return tuple(out)
            out.append(mantissa * scale)
        scale *= 10


class Families:
    """The registry, with one attribute per family (a bound child where labels are fixed)."""

    # set from the tables above; a labelled family is a dict of its children by label value
    running: Gauge
    waiting: Gauge
    kv_usage: Gauge
    waiting_by_reason: dict[str, Gauge]
    sleep_state: dict[str, Gauge]
    prefix_queries: Counter
    prefix_hits: Counter
    preemptions: Counter
    prompt_tokens: Counter
    prompt_cached: Counter
    generation_tokens: Counter
    prompt_by_source: dict[str, Counter]
    cached_by_source: dict[str, Counter]
    success: dict[str, Counter]
    drafts: Counter
    draft_tokens: Counter
    accepted: Counter
    accepted_per_pos: dict[str, Counter]
    h_prompt: Histogram
    h_generation: Histogram
    h_iteration: Histogram
    h_max_generation: Histogram
    h_n: Histogram
    h_max_tokens: Histogram
    h_ttft: Histogram
    h_itl: Histogram
    h_tpot: Histogram
    h_e2e: Histogram
    h_queue: Histogram
    h_inference: Histogram
    h_prefill: Histogram
    h_decode: Histogram
    h_preemptions: Histogram
    h_kv_computed: Histogram

    def __init__(self, profile: Profile, model_name: str, *, legacy: bool = False) -> None:
        self.legacy = legacy
        self.labels = {"engine": "0", "model_name": model_name}
        self.registry = CollectorRegistry(auto_describe=True)
        for collector in (ProcessCollector, PlatformCollector, GCCollector):
            collector(registry=self.registry)
        self._declare(Gauge, GAUGES)
        self._declare(Counter, COUNTERS)
        if profile.speculative.num_speculative_tokens:
            self._declare(Counter, SPEC_COUNTERS)
            positions = (
                "position",
                tuple(map(str, range(profile.speculative.num_speculative_tokens))),
            )
            self.accepted_per_pos = self._children("accepted_per_pos", *positions)
        self._declare_histograms(buckets_1_2_5(profile.model.max_model_len))
        self._declare_fixed(profile)
        for attr, (label, values) in LABEL_VALUES.items():
            setattr(self, attr, self._children(attr, label, values))
        self.sleep_state["awake"].set(1)

    def _name(self, name: str) -> str:
        return LEGACY_RENAMES.get(name, name) if self.legacy else name

    def _declare(self, kind: type, table: Iterable[tuple[str, str, str, tuple[str, ...]]]) -> None:
        for attr, name, doc, extra in table:
            metric = kind(self._name(name), doc, LABELS + extra, registry=self.registry)
            setattr(self, attr, metric if extra else metric.labels(**self.labels))

    def _declare_histograms(self, tokens: tuple[int, ...]) -> None:
        for attr, name, doc, buckets in HISTOGRAMS:
            metric = Histogram(
                self._name(name), doc, LABELS, registry=self.registry, buckets=buckets or tokens
            )
            setattr(self, attr, metric.labels(**self.labels))

    def _children(self, attr: str, label: str, values: tuple[str, ...]) -> dict[str, Any]:
        metric = getattr(self, attr)
        return {value: metric.labels(**self.labels, **{label: value}) for value in values}

    def _declare_fixed(self, profile: Profile) -> None:
        info = cache_config_labels(profile)
        config = Gauge(
            "vllm:cache_config_info",
            "Information of the LLMEngine CacheConfig",
            (*info, "engine"),
            registry=self.registry,
        )
        config.labels(**info, engine="0").set(1)
        self.rejections = Counter(
            "vllm:admission_rejections",
            "Number of admission attempts rejected by a queue limit, by reason.",
            ("model_name", "reason"),
            registry=self.registry,
        )
        for reason in ("max_num_queued_reqs", "max_num_queued_tokens"):
            self.rejections.labels(model_name=self.labels["model_name"], reason=reason)
        self.http = Counter(
            "http_requests",
            "Total number of requests by method, status and handler.",
            ("handler", "method", "status"),
            registry=self.registry,
        )

    def exposition(self, missing: Iterable[str] = ()) -> bytes:
        """The text a scrape returns, without the families named in ``missing``."""
        dropped = {family_key(name) for name in missing}
        text = generate_latest(FilteredRegistry(self.registry, dropped)).decode()
        return (legacy_counters(text) if self.legacy else text).encode()


def family_key(name: str) -> str:
    """``vllm:x_total``, ``vllm:x`` and ``x`` all name the family ``vllm:x``."""
    if not name.endswith("iteration_tokens_total"):
        name = name.removesuffix("_total")
    plain = ":" in name or name.startswith(("http_", "process_", "python_"))
    return name if plain else f"vllm:{name}"


class FilteredRegistry:
    """A registry view that leaves some families out (the missing-family fault)."""

    def __init__(self, registry: CollectorRegistry, dropped: set[str]) -> None:
        self.registry = registry
        self.dropped = dropped

    def collect(self) -> Iterator[Any]:
        for family in self.registry.collect():
            if family.name not in self.dropped:
                yield family


COUNTER_TYPE = re.compile(r"^# TYPE (vllm:\S+)_total counter$", re.MULTILINE)


def legacy_counters(text: str) -> str:
    """Write ``vllm:`` counters without ``_total`` and ``_created``, as old exporters did."""
    names = COUNTER_TYPE.findall(text)
    if not names:
        return text
    alternatives = "|".join(re.escape(n) for n in names)
    created = re.compile(rf"^(# (HELP|TYPE) )?({alternatives})_created\b.*\n", re.MULTILINE)
    text = created.sub("", text)
    return re.sub(rf"(?m)^(# (?:HELP|TYPE) )?({alternatives})_total\b", r"\1\2", text)


# cache_config_info labels that do not depend on the profile, as vLLM 0.32 reports them
STATIC_CACHE_CONFIG = {
    "_block_size_resolved": "True",
    "cache_hit_alignment_tokens": "None",
    "enable_mamba_shared_prefix_checkpoint": "False",
    "hash_block_size": "None",
    "is_attention_free": "False",
    "kv_cache_dtype_skip_layers": "[]",
    "kv_cache_layout": "None",
    "kv_offloading_backend": "native",
    "kv_offloading_size": "None",
    "kv_sharing_fast_prefill": "False",
    "mamba_block_size": "None",
    "mamba_cache_dtype": "auto",
    "mamba_cache_mode": "none",
    "mamba_page_size_padded": "None",
    "mamba_ssm_cache_dtype": "auto",
    "num_cpu_blocks": "None",
    "num_gpu_blocks_override": "None",
    "prefix_cache_retention_interval": "0",
    "prefix_caching_hash_algo": "sha256",
    "prefix_match_unit": "None",
    "replayssm_buffer_len": "16",
    "skip_page_size_padded": "None",
    "sliding_window": "None",
    "swa_bounded_replay": "True",
    "use_kda_recoverssm": "False",
    "use_replayssm": "False",
    "user_specified_block_size": "True",
}


def cache_config_labels(profile: Profile) -> dict[str, str]:
    engine, model = profile.engine, profile.model
    concurrency = engine.kv_cache_tokens / model.max_model_len
    labels = {
        **STATIC_CACHE_CONFIG,
        "block_size": str(engine.block_size),
        "cache_dtype": model.kv_cache_dtype,
        "effective_attention_block_size": str(engine.block_size),
        "enable_prefix_caching": str(engine.enable_prefix_caching),
        "gpu_memory_utilization": "0.9",
        "kv_cache_max_concurrency": f"{concurrency:.1f}",
        "kv_cache_memory_bytes": str(int(model.kv_cache_gib * 2**30)),
        "kv_cache_size_tokens": str(engine.kv_cache_tokens),
        "num_gpu_blocks": str(engine.num_gpu_blocks),
    }
    return dict(sorted(labels.items()))
