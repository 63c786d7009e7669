"""A needle search and an agentic conversation run as cells of a real campaign.

Two simulator lanes under the Prefect test harness, each configured to garble the
needle marker beyond its own length: the needle_search cell's verified length per arm
must bracket that length within one bisection step, the summary must hold it, and the
card must say it in one line. The agentic cell's card gives the TTFT of each turn,
checked against the journal's turns.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff import format as fmt
from faceoff.formats.attempt.journal import Phase
from flows.prefect.flow_runner import run_campaign
from tests.e2e.matrices import arm, campaign, write_matrix
from tests.e2e.test_probes_campaign import scored, ttft
from workload.journal import read_journal

pytestmark = pytest.mark.prefect

EDGES = {"inc": 3000, "cand": 1500}  # prompt tokens beyond which each lane garbles the marker
LOW, HIGH, STEP, BUDGET = 500, 6000, 250, 10
TURNS = 3
SEARCH_CELL = f"needle-search-{HIGH}-c1"
AGENTIC_CELL = "agentic-600-c1"


def probe_matrix(folder: Path) -> Path:
    arms = [
        arm(name, role, simulator={"faults": {"needle_miss_above_tokens": edge}})
        for (name, edge), role in zip(EDGES.items(), ("incumbent", "candidate"), strict=True)
    ]
    cells = [
        {"kind": "needle_search", "deadline_s": 120.0,
         "search": {"low": LOW, "high": HIGH, "step": STEP, "budget": BUDGET},
         "sampling": {"max_tokens": 64, "reasoning_effort": "low"}},
        {"kind": "agentic", "id": AGENTIC_CELL, "input_tokens": 600, "concurrency": 1,
         "requests": 2 * TURNS, "deadline_s": 120.0,
         "sampling": {"max_tokens": 48, "ignore_eos": True},  # every turn answers: ok
         "agentic": {"turns": TURNS, "tool_result_tokens": 200}},
    ]  # fmt: skip
    return write_matrix(folder, campaign("probe-kinds", arms, cells=cells))


def attempt(bundle: Path, cell: str, arm_name: str) -> Path:
    return sorted((bundle / "cells" / cell / arm_name).glob("attempt-*"))[-1]


def test_the_search_brackets_each_lanes_edge_and_the_card_answers_both_kinds(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    result = run_campaign(probe_matrix(tmp_path), workdir)

    assert result.restored, result.closure.sentence
    assert result.closure.sentence.startswith("complete: 4 accepted"), result.closure.sentence
    audit = audit_bundle(result.bundle)  # summaries, verdicts and answers recompute
    assert audit.ok, audit.findings
    comparison = json.loads((result.bundle / "comparison.json").read_text())
    section = result.card.split("## What each probe answers", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("- ")]

    verified = {}
    for name, edge in EDGES.items():
        folder = attempt(result.bundle, SEARCH_CELL, name)
        summary = json.loads((folder / "summary.json").read_text())
        search = summary["needle_search"]
        assert search["verified_tokens"] <= edge < search["failed_tokens"], search
        assert search["resolution_tokens"] <= STEP  # within one bisection step
        probes = read_journal(folder / "journal.jsonl").outcomes
        assert {o.phase for o in probes} == {Phase.PROBE} and len(probes) <= BUDGET
        assert len(search["probes"]) == len(probes)
        assert summary["metrics"]["ttft_s"]["n"] == 0  # probes are no latency samples
        verdict = json.loads((folder / "verdict.json").read_text())
        rules = {r["code"]: r for r in verdict["rules"]}
        assert rules["needle_missed"]["outcome"] == "not_applicable"  # misses are the answer
        assert rules["requests_not_terminal"]["outcome"] == "passed"
        verified[name] = search["verified_tokens"]

    entry = next(c for c in comparison["cells"] if c["id"] == SEARCH_CELL)
    (answer,) = entry["answers"]
    assert entry["pairs"][0]["verdict"] == "not compared"  # no latency ratio to judge
    assert (answer["incumbent_value"], answer["candidate_value"]) == (
        verified["inc"], verified["cand"],
    )  # fmt: skip
    assert f"- {SEARCH_CELL} (C1), cand: no latency ratio; a needle search pairs" in result.card
    line = next(x for x in lines if x.startswith(f"- {SEARCH_CELL} "))
    assert (
        f"longest verified needle retrieval (verified): inc {fmt.count(verified['inc'])} tokens, "
        f"cand {fmt.count(verified['cand'])} tokens; "
        f"ratio {verified['cand'] / verified['inc']:.2f}×"
    ) in line, line

    for turn in range(1, TURNS + 1):
        inc, cand = (
            statistics.median(
                t for o in scored(result.bundle, AGENTIC_CELL, a)
                if o.role.value == f"turn_{turn}" if (t := ttft(o)) is not None
            )
            for a in ("inc", "cand")
        )  # fmt: skip
        label = f"agentic turn {turn} TTFT"
        line = next(x for x in lines if x.startswith(f"- {AGENTIC_CELL} ") and label in x)
        assert f"inc {fmt.seconds(inc)}, cand {fmt.seconds(cand)}" in line, line
        assert f"ratio {cand / inc:.2f}×" in line and "interval" in line, line
    roles = json.loads((attempt(result.bundle, AGENTIC_CELL, "inc") / "summary.json").read_text())
    assert list(roles["roles"]) == [f"turn_{k}" for k in range(1, TURNS + 1)]
