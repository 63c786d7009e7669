"""A replayed trace's prefix reuse on the card: the reuse the plan computed offline from the
trace's hash_ids beside each arm's measured prefix-cache hit ratio, one line per cell.

Two simulator lanes on the steady ``bench-200`` engine (its KV pool holds every prefix of
the trace): the incumbent caches prefixes, the candidate runs a copy of the profile with
``enable_prefix_caching = false``. The incumbent's ratio is within 5 points of the offline
reuse; the candidate's is 0; ``comparison.json`` and ``RESULT.md`` say both. A dataset cell
beside it shows its arms' ratios with no planned figure.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff.formats.bundle.comparison import Comparison
from flows.prefect.flow_runner import run_campaign
from tests.e2e.matrices import LOADED_HOST, NOT_APPLICABLE, arm, write_matrix
from workload.traffic.samples import TraceShape, jsonl, mooncake_trace

pytestmark = pytest.mark.prefect

PROFILES = Path(__file__).resolve().parents[2] / "simulator" / "profiles"
EXAMPLES = Path(__file__).resolve().parents[2] / "matrix" / "examples"
# 48-64 tokens, 240-320 ms a stream: a loaded host's stall seldom hands the client a whole
# answer in one read (decode undefined, the cell rightly blocked)
SHAPE = TraceShape(requests=40, systems=3, max_blocks=6, output_tokens=(48, 64))
POINTS = 0.05


def uncached_profile(folder: Path) -> Path:
    text = (PROFILES / "bench-200.toml").read_text()
    path = folder / "bench-200-uncached.toml"
    path.write_text(text.replace("[engine]\n", "[engine]\nenable_prefix_caching = false\n", 1))
    return path


def reuse_matrix(folder: Path) -> Path:
    trace = folder / "trace.jsonl"
    trace.write_text(jsonl(mooncake_trace(SHAPE)))
    bench = {"served_model": "sim-bench"}
    arms = [
        arm("cached", "incumbent", simulator={"profile": "bench-200", "time_scale": 1.0}, **bench),
        arm("uncached", "candidate", **bench,
            simulator={"profile": str(uncached_profile(folder)), "time_scale": 1.0}),
    ]  # fmt: skip
    cells = [
        {"id": "replay", "kind": "trace", "concurrency": 8, "deadline_s": 120.0,
         "trace": {"file": str(trace), "format": "mooncake", "time_scale": 10.0},
         "sampling": {"max_tokens": 64}},
        {"id": "chat", "kind": "dataset", "input_tokens": 2048, "concurrency": 2,
         "requests": 6, "deadline_s": 120.0, "sampling": {"max_tokens": 64},
         "dataset": {"file": str(EXAMPLES / "data" / "chat-50.jsonl"), "format": "openai"}},
    ]  # fmt: skip
    data = {
        "schema_version": 1,
        "campaign": {"name": "sim-reuse", "seed": 5, "stop_policy": "continue"},
        "arms": arms,
        "cells": cells,
        "families": {"not_applicable": NOT_APPLICABLE},
        "thresholds": LOADED_HOST | {"max_schedule_lag_ms": 1000},
    }
    return write_matrix(folder, data)


def test_the_card_says_the_planned_reuse_beside_each_arms_hit_ratio(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    result = run_campaign(reuse_matrix(tmp_path), workdir)

    assert result.complete and result.restored, result.closure.sentence
    comparison = Comparison.read(result.bundle / "comparison.json")
    cells = {c.id: c for c in comparison.cells}
    replay = cells["replay"].reuse
    assert replay is not None and replay.source == "trace" and replay.expected is not None
    assert replay.expected > 0.3, replay  # the trace reuses: the comparison means something
    cached, uncached = replay.arms
    assert cached.arm == "cached" and cached.ratio is not None
    assert abs(cached.ratio - replay.expected) <= POINTS, replay
    assert uncached.ratio == 0 and uncached.queries, replay
    chat = cells["chat"].reuse
    assert (
        chat is not None and chat.expected is None and all(a.ratio is not None for a in chat.arms)
    )

    card = (result.bundle / "RESULT.md").read_text()
    (line,) = [x for x in card.splitlines() if x.startswith("- **replay** (trace)")]
    assert f"planned {replay.expected:.1%} offline" in line
    assert f"cached {cached.ratio:.1%}" in line and "uncached 0.0%" in line
    assert re.search(r"\[\d+\]\.$", line)  # its source, numbered in the appendix
    assert any(
        x.startswith("- **chat** (dataset): planned: no offline reuse") for x in card.splitlines()
    )
    assert audit_bundle(result.bundle).ok  # the audit's rebuilt comparison says the same
