"""Parsing real vLLM exposition text into canonical families, across renames."""

from __future__ import annotations

import pytest

from collectors.aliases import Alias, AliasTable, Kind, vllm_aliases
from collectors.prometheus import MetricsParseError, parse_metrics, without_buckets
from tests.collectors.metrics_server import drop_family

LEGACY = {
    "vllm:kv_cache_usage_perc": "vllm:gpu_cache_usage_perc",
    "vllm:prefix_cache_queries": "vllm:gpu_prefix_cache_queries",
    "vllm:prefix_cache_hits": "vllm:gpu_prefix_cache_hits",
    "vllm:inter_token_latency_seconds": "vllm:time_per_output_token_seconds",
}


def legacy(text: str) -> str:
    """The same scrape as an older vLLM names it."""
    for new, old in LEGACY.items():
        text = text.replace(new, old)
    return text


def test_vllm_032_scrape_gives_every_expected_family(vllm_text: str) -> None:
    metrics = parse_metrics(vllm_text, vllm_aliases())
    assert metrics.missing == []
    assert metrics.aliased == {}
    assert metrics.counters["prompt_tokens"] == 52
    assert metrics.counters["generation_tokens"] == 128
    assert metrics.counters['request_success{finished_reason="length"}'] == 5
    assert metrics.histograms["request_prefill_time_seconds"].count == 5
    assert metrics.histograms["request_prefill_time_seconds"].sum == pytest.approx(0.10600929)
    assert metrics.histograms["request_queue_time_seconds"].count == 5
    info = metrics.info["cache_config_info"]
    assert (info["block_size"], info["num_gpu_blocks"]) == ("128", "4096")
    assert set(metrics.gauges) >= {"num_requests_running", "num_requests_waiting"}


def test_renamed_families_resolve_to_canonical_names_and_say_so(vllm_text: str) -> None:
    table = vllm_aliases()
    new = parse_metrics(vllm_text, table)
    old = parse_metrics(legacy(vllm_text), table)
    assert old.missing == []
    assert old.counters == new.counters
    assert old.histograms == new.histograms
    assert old.gauges == new.gauges
    assert old.aliased == {
        "kv_cache_usage_perc": "vllm:gpu_cache_usage_perc",
        "prefix_cache_queries": "vllm:gpu_prefix_cache_queries",
        "prefix_cache_hits": "vllm:gpu_prefix_cache_hits",
        "inter_token_latency_seconds": "vllm:time_per_output_token_seconds",
    }


def test_when_both_names_are_exposed_the_newest_wins() -> None:
    text = (
        "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc 0.9\n"
        "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc 0.25\n"
    )
    metrics = parse_metrics(text, vllm_aliases())
    assert metrics.gauges["kv_cache_usage_perc"] == 0.25
    assert "kv_cache_usage_perc" not in metrics.aliased


def test_counters_match_with_and_without_total_and_untyped() -> None:
    with_total = "# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total 7\n"
    bare_counter = "# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens 7\n"
    bare = "# TYPE vllm:prompt_tokens gauge\nvllm:prompt_tokens 7\n"
    untyped = "vllm:prompt_tokens_total 7\n"
    for text in (with_total, bare_counter, bare, untyped):
        assert parse_metrics(text, vllm_aliases()).counters == {"prompt_tokens": 7}


def test_series_of_a_data_parallel_lane_are_combined_per_family() -> None:
    text = "\n".join(
        [
            "# TYPE vllm:num_requests_running gauge",
            'vllm:num_requests_running{engine="0"} 3',
            'vllm:num_requests_running{engine="1"} 2',
            "# TYPE vllm:kv_cache_usage_perc gauge",
            'vllm:kv_cache_usage_perc{engine="0"} 0.4',
            'vllm:kv_cache_usage_perc{engine="1"} 0.7',
            "# TYPE vllm:request_success counter",
            'vllm:request_success_total{engine="0",finished_reason="stop"} 4',
            'vllm:request_success_total{engine="1",finished_reason="stop"} 5',
            'vllm:request_success_total{engine="1",finished_reason="length"} 1',
            "",
        ]
    )
    metrics = parse_metrics(text, vllm_aliases())
    assert metrics.gauges["num_requests_running"] == 5  # sum: requests in the lane
    assert metrics.gauges["kv_cache_usage_perc"] == 0.7  # max: the fullest engine
    assert metrics.counters == {
        'request_success{finished_reason="stop"}': 9,
        'request_success{finished_reason="length"}': 1,
    }


def test_a_dropped_family_is_listed_missing(vllm_text: str) -> None:
    text = drop_family(vllm_text, "vllm:request_prefill_time_seconds")
    metrics = parse_metrics(text, vllm_aliases())
    assert metrics.missing == ["request_prefill_time_seconds"]
    assert "request_prefill_time_seconds" not in metrics.histograms


def test_a_histogram_without_its_count_is_missing_not_half_read() -> None:
    text = (
        "# TYPE vllm:request_queue_time_seconds histogram\n"
        "vllm:request_queue_time_seconds_sum 1.5\n"
    )
    metrics = parse_metrics(text, vllm_aliases())
    assert "request_queue_time_seconds" in metrics.missing


def test_non_finite_values_count_as_absent() -> None:
    text = "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc NaN\n"
    metrics = parse_metrics(text, vllm_aliases())
    assert "kv_cache_usage_perc" in metrics.missing and metrics.gauges == {}


@pytest.mark.parametrize(
    "body",
    [
        "<html><body>502 Bad Gateway {{{</body></html>\n",
        "vllm:num_requests_running{engine=0 3\n",
        "vllm:num_requests_running not-a-number\n",
    ],
)
def test_garbage_is_a_parse_error(body: str) -> None:
    with pytest.raises(MetricsParseError, match="not Prometheus text"):
        parse_metrics(body, vllm_aliases())


def test_an_empty_body_parses_with_every_family_missing() -> None:
    metrics = parse_metrics("", vllm_aliases())
    assert metrics.missing == list(vllm_aliases().expected)


def test_bucket_lines_are_dropped_before_parsing_and_nothing_else(vllm_text: str) -> None:
    stripped = without_buckets(vllm_text)
    assert "_bucket{" not in stripped
    kept = [line for line in vllm_text.split("\n") if "_bucket{" not in line]
    assert stripped.split("\n") == kept


def test_one_wire_name_cannot_belong_to_two_aliases() -> None:
    with pytest.raises(ValueError, match="claimed by two aliases"):
        AliasTable(
            (
                Alias("a", Kind.GAUGE, ("vllm:x",)),
                Alias("b", Kind.GAUGE, ("vllm:x",)),
            )
        )


def test_a_counter_or_histogram_declared_before_its_first_series_is_zero_not_missing() -> None:
    text = (
        "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
        "# TYPE vllm:prompt_tokens_total counter\n"
        "# HELP vllm:request_success_total Count of successfully processed requests.\n"
        "# TYPE vllm:request_success_total counter\n"
        "# HELP vllm:request_queue_time_seconds Time spent in WAITING phase for request.\n"
        "# TYPE vllm:request_queue_time_seconds histogram\n"
        "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
        "# TYPE vllm:num_requests_running gauge\n"
    )
    metrics = parse_metrics(text, vllm_aliases())
    assert metrics.counters == {"prompt_tokens": 0.0}
    assert metrics.histograms["request_queue_time_seconds"].count == 0
    present = {"prompt_tokens", "request_success", "request_queue_time_seconds"}
    assert present.isdisjoint(metrics.missing)
    assert "num_requests_running" in metrics.missing  # a gauge with no value carries nothing
