"""The KV pool of a cell: the engine's own kv_cache_size_tokens first, block × blocks else."""

from __future__ import annotations

from collectors.aliases import vllm_aliases
from collectors.cadence import CellWindow
from collectors.prometheus import parse_metrics
from collectors.settings import CollectorSettings
from collectors.telemetry import engine_summary
from faceoff.formats.attempt.collector_samples import EngineSample
from tests.collectors.builders import MS, tick

SETTINGS = CollectorSettings(engine_period_s=0.5, memory_period_s=2.0)


def pool(text: str) -> int | None:
    table = vllm_aliases()
    samples = [
        EngineSample(**tick(seq, 500), status="ok", http_status=200, error=None,  # type: ignore[arg-type]
                     metrics=parse_metrics(text, table))
        for seq in range(3)
    ]  # fmt: skip
    window = CellWindow(start_ns=400 * MS, end_ns=600 * MS)
    return engine_summary(samples, window, SETTINGS, table).kv_pool_tokens


def test_the_pool_is_the_engines_kv_cache_size_tokens_where_reported(vllm_text: str) -> None:
    # The captured vLLM 0.32 scrape: 4,096 blocks of 128 tokens, kv_cache_size_tokens equal.
    assert pool(vllm_text) == 524_288
    # With decode-context parallelism 2 the engine reports twice the tokens of block × blocks.
    dcp2 = vllm_text.replace('kv_cache_size_tokens="524288"', 'kv_cache_size_tokens="1048576"')
    assert pool(dcp2) == 1_048_576
    # An engine without the label: block × blocks.
    older = vllm_text.replace('kv_cache_size_tokens="524288",', "")
    assert pool(older) == 524_288
