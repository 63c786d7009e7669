"""A replayed trace on two real vLLM engines: the prefix reuse it records is the reuse they see.

A Mooncake-format trace (``workload.traffic.samples``, sized for the tiny model's 8,192-token
context: at most 10 blocks of 512 tokens, outputs of 8–16 tokens, one request every 2 s so
each prompt is computed before a later one reuses it; 15 requests, whose offline reuse is
52 %: twice as many took a minute more per arm for 56 %) is replayed on an incumbent with
vLLM's prefix caching and a candidate started with ``--no-enable-prefix-caching``. The
incumbent's hit ratio from the ``vllm:prefix_cache_hits`` / ``queries`` deltas over the
cell (``telemetry.json``) is within 5 points of the reuse computed offline from the
trace's hash_ids (``requests.json``: ``source.reuse``); the candidate hits nothing. The
card's "Prefix reuse" line says both.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff.formats.attempt.request_plan import RequestPlan, TraceSource
from faceoff.formats.attempt.telemetry import TELEMETRY_FILE, TelemetrySummary
from flows.prefect.flow_runner import run_campaign
from guards.judge import judge_pair
from tests.e2e.matrices import LOADED_HOST, write_matrix
from tests.vllm.engine import NOT_APPLICABLE, vllm_arm
from workload.traffic.samples import TraceShape, jsonl, mooncake_trace

pytestmark = [pytest.mark.vllm, pytest.mark.prefect]

SHAPE = TraceShape(requests=15, systems=3, max_blocks=10, output_tokens=(8, 16))
GAP_MS = 2000  # each prompt computed before the next arrives
POINTS = 0.05


def trace_file(folder: Path) -> Path:
    records = mooncake_trace(SHAPE)
    for index, record in enumerate(records):
        record["timestamp"] = index * GAP_MS
    path = folder / "trace.jsonl"
    path.write_text(jsonl(records))
    return path


def trace_matrix(folder: Path, model: Path) -> Path:
    cell = {
        "id": "replay", "kind": "trace", "concurrency": 4, "deadline_s": 600.0,
        "trace": {"file": str(trace_file(folder)), "format": "mooncake"},
        "sampling": {"max_tokens": 16, "seed": False},  # the CPU build's seeded-prefill crash
    }  # fmt: skip
    data = {
        "schema_version": 1,
        "campaign": {"name": "vllm-trace", "seed": 11, "stop_policy": "continue"},
        "arms": [
            vllm_arm("cached", "incumbent", model),
            vllm_arm("uncached", "candidate", model, "--no-enable-prefix-caching"),
        ],
        "cells": [cell],
        "families": {"not_applicable": NOT_APPLICABLE},
        "thresholds": LOADED_HOST,
    }
    return write_matrix(folder, data)


def attempt(bundle: Path, arm: str) -> Path:
    return bundle / "cells" / "replay" / arm / "attempt-1"


def hits_and_queries(folder: Path) -> tuple[float, float]:
    counters = TelemetrySummary.read(folder / TELEMETRY_FILE).engine.counters
    hits, queries = counters["prefix_cache_hits"], counters["prefix_cache_queries"]
    assert hits.exact and queries.exact, (hits, queries)
    return hits.delta, queries.delta


def test_a_replayed_trace_hits_the_prefix_cache_as_its_hash_ids_say(
    prefect_harness: None,
    tiny_model: Path,
    workdir: Path,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    result = run_campaign(trace_matrix(tmp_path, tiny_model), workdir)

    assert result.complete and result.restored, result.closure.sentence
    bundle = result.bundle
    for arm in ("cached", "uncached"):
        verdict = json.loads((attempt(bundle, arm) / "verdict.json").read_text())
        assert verdict["disposition"] == "accepted", verdict["sentence"]
    pair = judge_pair(attempt(bundle, "cached"), attempt(bundle, "uncached"))
    assert pair.outcome.value == "passed", pair.detail
    source = RequestPlan.read(attempt(bundle, "cached") / "requests.json").source
    assert isinstance(source, TraceSource) and source.reuse.ratio is not None
    hits, queries = hits_and_queries(attempt(bundle, "cached"))
    off_hits, off_queries = hits_and_queries(attempt(bundle, "uncached"))
    for name, value in (("offline_reuse", source.reuse.ratio), ("cached_hits", hits),
                        ("cached_queries", queries), ("uncached_hits", off_hits),
                        ("uncached_queries", off_queries)):  # fmt: skip
        record_property(name, value)  # the figures, in the JUnit XML
    assert source.reuse.ratio > 0.3  # the trace reuses; the comparison below means something
    assert abs(hits / queries - source.reuse.ratio) <= POINTS, (hits, queries, source.reuse)
    assert off_hits == 0, (off_hits, off_queries)
    card = (bundle / "RESULT.md").read_text()
    (line,) = [x for x in card.splitlines() if x.startswith("- **replay** (trace)")]
    assert f"planned {source.reuse.ratio:.1%} offline" in line, line
    assert f"cached {hits / queries:.1%}" in line, line
    said = f"{off_hits / off_queries:.1%}" if off_queries else "none (0 tokens queried)"
    assert f"uncached {said}" in line, line
    report = audit_bundle(bundle)
    assert report.ok, report
