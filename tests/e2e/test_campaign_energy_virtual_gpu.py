"""A campaign on the virtual GPU, end to end: energy per token, draft acceptance by content and
a rule on energy, as the card shows them and the audit recomputes them.

Two simulator arms on two virtual GPUs each; the candidate speculates (the tiny profile with
MTP: 3 draft tokens, 85 % per position on structured text, 62 % on prose). Its two cells are
the probe pair decode_structured / decode_prose. The test reads the native files itself:
the energy per output token on the card is the energy counter's delta over the scored window
(read from gpu.jsonl) over the scored requests' completion tokens; the acceptance on the
card is the spec_decode counters' deltas in engine.jsonl; structured decode accepts more
drafts than prose; the declared rule on energy_per_token_j shows each cell's ratio and decides
nothing (one window's energy is a point, without an interval); and `faceoff audit`
finds an energy counter changed in gpu.jsonl through the summary it recomputes.
"""

from __future__ import annotations

import json
import shutil
from itertools import pairwise
from pathlib import Path

import pytest

from collectors.telemetry import read_samples
from evidence.audit.reverify import audit_bundle
from evidence.views.card.speculation import words as acceptance_words
from faceoff import format as fmt
from faceoff.formats.attempt.collector_samples import EngineSample, GpuSample
from faceoff.formats.attempt.journal import JOURNAL_NAME, Phase
from faceoff.formats.attempt.stalls import ENGINE_FILE, GPU_FILE
from faceoff.formats.attempt.summary import SUMMARY_FILE, RequestSummary
from faceoff.formats.bundle.comparison import Comparison
from flows.prefect.flow_runner import run_campaign
from simulator.profile import PROFILE_DIR
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix
from workload.journal import read_journal

pytestmark = pytest.mark.prefect
GPU_IDS = [0, 1]
TIME_SCALE = 4.0
MTP = """
[speculative]
method = "mtp"
num_speculative_tokens = 3
acceptance_structured = 0.85
acceptance_prose = 0.62
"""
CELLS = ("decode-structured-600-c1", "decode-prose-600-c1")
DRAFTS = "spec_decode_num_drafts"
DRAFT_TOKENS = "spec_decode_num_draft_tokens"
ACCEPTED = "spec_decode_num_accepted_tokens"


def mtp_profile(folder: Path) -> Path:
    """The tiny test engine, speculating with MTP."""
    path = folder / "tiny-mtp.toml"
    path.write_text((PROFILE_DIR / "tiny.toml").read_text() + MTP)
    return path


def test_virtual_gpu_energy_acceptance_and_an_energy_rule_on_the_card(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    cell = {"input_tokens": 600, "concurrency": 1, "requests": 6, "deadline_s": 60.0,
            "sampling": {"max_tokens": 64}}  # fmt: skip
    slower = {"time_scale": TIME_SCALE}  # MTP steps of 4 tokens must not all land in one read
    arms = [
        arm("inc", "incumbent", gpu_ids=GPU_IDS, simulator=slower),
        arm("cand", "candidate", gpu_ids=GPU_IDS,
            simulator=slower | {"profile": str(mtp_profile(tmp_path))}),
    ]  # fmt: skip
    rule = {"criteria": [{"metric": "energy_per_token_j", "superiority": 0.10}]}
    data = matrix("virtual-gpu-energy", arms) | {
        "cells": [cell | {"id": CELLS[0], "kind": "decode_structured"},
                  cell | {"id": CELLS[1], "kind": "decode_prose"}],
        "families": {"not_applicable": {}},
        "rule": rule,
    }  # fmt: skip
    result = run_campaign(write_matrix(tmp_path, data), workdir)
    assert result.complete, result.closure.sentence
    comparison = Comparison.read(result.bundle / "comparison.json")
    card = (result.bundle / "RESULT.md").read_text()

    for entry in comparison.cells:
        for side in entry.arms:
            attempt = result.bundle / f"cells/{entry.id}/{side.arm}/attempt-1"
            assert side.energy is not None and side.energy.method == "counter"
            expected = counter_joules(attempt) / output_tokens(attempt)
            assert side.energy.energy_per_token_j == pytest.approx(expected, rel=1e-9)
            shown = f"{side.energy.energy_per_token_j:.3g} J/tok"
            assert f"{shown} ({side.energy.output_tokens_per_j:.3g} tok/J; energy counter, " \
                "**simulated**)" in card  # fmt: skip
            speculation = counter_deltas(attempt)
            if side.arm == "inc":
                assert side.speculation is None  # no speculative counters at all
                continue
            assert side.speculation is not None
            rate = speculation[ACCEPTED] / speculation[DRAFT_TOKENS]
            length = 1 + speculation[ACCEPTED] / speculation[DRAFTS]
            assert side.speculation.acceptance_rate == pytest.approx(rate, rel=1e-12)
            assert side.speculation.mean_acceptance_length == pytest.approx(length, rel=1e-12)
            assert acceptance_words(side.speculation) in card

    (pair,) = [p for p in comparison.spec_pairs if p.arm == "cand"]
    assert pair.structured is not None and pair.prose is not None
    assert pair.structured.acceptance_rate is not None and pair.prose.acceptance_rate is not None
    assert pair.structured.acceptance_rate > pair.prose.acceptance_rate + 0.05
    assert f"{fmt.percent(pair.structured.acceptance_rate)} / " in card

    assert comparison.ruling is not None
    (ruled,) = comparison.ruling.candidates
    (line,) = ruled.criteria
    assert (ruled.outcome, line.status) == ("no_decision", "inconclusive"), line.sentence
    assert "descriptive only: a point ratio of one window, with no interval" in line.sentence
    for judged in line.cells:
        ratio = ratio_of(comparison, judged.cell)
        assert judged.ratio == pytest.approx(ratio) and judged.ratio < 0.9
    assert "energy per output token (J) at least 10% better" in card

    posture = comparison.posture
    assert posture is not None and posture.gpu_start is None  # no arm on hardware GPUs
    lanes = [(x.run, x.posture.simulated, len(x.posture.devices)) for x in posture.lanes]
    # the second cell runs the candidate first: the incumbent walks again after it
    assert lanes == [("lanes/inc/campaign-001", True, 2), ("lanes/inc/campaign-002", True, 2),
                     ("lanes/cand/campaign-001", True, 2)]  # fmt: skip
    assert "## GPU posture" in card and "ok, **simulated**" in card
    assert audit_bundle(result.bundle).ok

    tampered = tmp_path / "tampered"
    shutil.copytree(result.bundle, tampered)
    heavier(tampered / f"cells/{CELLS[0]}/cand/attempt-1" / GPU_FILE)
    found = [f.line for f in audit_bundle(tampered).findings]
    summary = f"cells/{CELLS[0]}/cand/attempt-1/{SUMMARY_FILE}: energy.energy_per_token_j"
    assert any(f.startswith(summary) for f in found), found


def counter_joules(attempt: Path) -> float:
    """The energy counters' delta over the scored window, every GPU, each edge read on the
    line between the two samples around it."""
    summary = RequestSummary.read(attempt / SUMMARY_FILE)
    start, end = summary.first_send_ns, summary.last_end_ns
    assert start is not None and end is not None
    samples, bad = read_samples(attempt / GPU_FILE, GpuSample)
    assert bad == 0 and all(s.simulated for s in samples)
    total = 0.0
    for index in GPU_IDS:
        points = sorted(
            (s.actual_ns + s.latency_ns // 2, r.energy_mj)
            for s in samples
            for r in s.devices
            if r.index == index and r.energy_mj is not None
        )
        assert points[0][0] <= start and points[-1][0] >= end  # the samples span the window
        total += (at(points, end) - at(points, start)) / 1000
    return total


def at(points: list[tuple[int, int]], when: int) -> float:
    for (t0, v0), (t1, v1) in pairwise(points):
        if t0 <= when <= t1:
            return v0 + (v1 - v0) * (when - t0) / (t1 - t0) if t1 > t0 else float(v0)
    raise AssertionError(f"{when} is outside the samples")


def output_tokens(attempt: Path) -> int:
    lines = read_journal(attempt / JOURNAL_NAME).outcomes
    return sum(
        o.usage.completion_tokens
        for o in lines
        if o.phase is Phase.SCORED and o.usage is not None and o.send_ns is not None
    )


def counter_deltas(attempt: Path) -> dict[str, float]:
    """The spec_decode counters from the first engine sample (before any request of the
    attempt) to the last (the drain, after every one)."""
    samples, _ = read_samples(attempt / ENGINE_FILE, EngineSample)
    ok = [s.metrics for s in samples if s.ok and s.metrics is not None]
    first, last = ok[0].counters, ok[-1].counters
    return {k: last[k] - first.get(k, 0.0) for k in last if k.startswith("spec_decode")}


def ratio_of(comparison: Comparison, cell_id: str) -> float:
    entry = next(c for c in comparison.cells if c.id == cell_id)
    base, top = (next(a for a in entry.arms if a.arm == name) for name in ("inc", "cand"))
    assert base.energy is not None and top.energy is not None
    assert base.energy.energy_per_token_j and top.energy.energy_per_token_j
    return top.energy.energy_per_token_j / base.energy.energy_per_token_j


def heavier(path: Path) -> None:
    """GPU 0's energy counter 1 kJ higher at each sample than the one before it: more
    energy between every two samples, so in the window too."""
    lines = path.read_text().splitlines()
    out = []
    for k, line in enumerate(lines):
        record = json.loads(line)
        for reading in record["devices"]:
            if reading["index"] == 0 and reading["energy_mj"] is not None:
                reading["energy_mj"] += 1_000_000 * k
        out.append(json.dumps(record, separators=(",", ":")))
    path.write_text("\n".join(out) + "\n")
