"""RESULT.md of the glm53-shaped campaign: every section, every figure traced to a file."""

from __future__ import annotations

import re

from evidence.bundle.write import BundleIndex
from evidence.comparison.caveats import caveats
from evidence.comparison.cells import ratio_verdict
from evidence.views.card.render import render_card
from faceoff import format as fmt
from faceoff.formats.bundle.comparison import RATIO_LABELS, Comparison
from workload.metrics import DEFINITIONS, higher_is_better


def card(built: BundleIndex) -> str:
    return (built.root / "RESULT.md").read_text(encoding="utf-8")


def test_the_card_opens_with_the_decision_and_the_scope(built: BundleIndex) -> None:
    text = card(built)
    assert text.startswith("# glm53-sim: exl3-r11 versus nvfp4-r2\n")
    assert "Decision: pending human review; incumbent exl3-r11 restored." in text
    assert "2 comparable matched pair(s)" in text
    assert "closed partial: 4 accepted, 1 failed, 1 blocked, 0 pending of 6 planned" in text


def test_headline_figures_are_the_comparisons_own_values(built: BundleIndex) -> None:
    text, comparison = card(built), built.comparison
    cell = next(c for c in comparison.cells if c.id == "natural-31600-c2")
    inc, cand = cell.arms
    prefill = [a.metrics["effective_prefill_tps"].p50 for a in (inc, cand)]
    row = f"effective prefill p50 | {fmt.rate(prefill[0])} tok/s | {fmt.rate(prefill[1])} tok/s"
    assert row in text
    e2e = inc.metrics["e2e_s"]
    assert f"{fmt.seconds(e2e.p50)} ({fmt.seconds(e2e.p95)})" in text
    pools = [t.kv_pool_tokens for t in comparison.totals]
    assert f"| Runtime-reported KV token pool | {pools[0]:,} slots | {pools[1]:,} slots |" in text
    assert "| Startup-reported KV allocation per GPU | 7.75 GiB, as printed | 7.12 GiB" in text
    assert (
        "| Accepted requests / OOM / preemption / refusal | 8 / 0 / 0 / 0 | 8 / 0 / 0 / 0 |" in text
    )
    assert "not applicable (declared)" in text  # gpu_memory on a host without GPUs


def test_every_reference_names_existing_bundle_files_as_links(built: BundleIndex) -> None:
    text = card(built)
    refs = re.findall(r"\| \[(\d+)\] \|", text)
    sources = text.split("## Appendix: sources", 1)[1]
    entries = re.findall(
        r"^(\d+)\. \[`comparison.json`\]\(comparison.json\) → `([^`]+)` ← (.+)$", sources, re.M
    )
    assert refs and {int(n) for n in refs} == {int(n) for n, _, _ in entries}
    for _, _, files in entries:
        for name in re.findall(r"`([^`]+)`", files):
            if "*" not in name:
                assert f"[`{name}`]({name})" in files
                assert (built.root / name).is_file(), name


def test_the_verdict_per_cell_opens_the_card_and_reads_each_metrics_direction(
    built: BundleIndex,
) -> None:
    text = card(built)
    assert text.index("## Verdict per cell") < text.index("## Result card")
    section = text.split("## Verdict per cell", 1)[1].split("## ", 1)[0]
    for cell in built.comparison.cells:
        for pair in (p for p in cell.pairs if p.comparable):
            line = next(x for x in section.splitlines() if x.startswith(f"- {cell.id} "))
            assert f"{pair.candidate}: **{pair.verdict}** — " in line
            for r in cell.ratios:
                label = RATIO_LABELS[r.metric]
                if r.verdict in ("no difference", "descriptive"):
                    said = {
                        "no difference": "no difference on",
                        "descriptive": "descriptive only on",
                    }
                    assert label in line.split(said[r.verdict], 1)[1]
                else:
                    assert f"{label} ({r.ratio:.2f}× the incumbent's p50" in line
    assert (
        "- controlled-8192-c1 (C1), nvfp4-r2: not compared (not comparable: exl3-r11 failed"
        in section
    )


def test_a_ratio_is_better_or_worse_in_its_metrics_direction() -> None:
    assert higher_is_better("decode_tps") and not higher_is_better("ttft_s")
    assert ratio_verdict(1.1, 1.3, higher_is_better=True) == "better"  # faster decode
    assert ratio_verdict(1.1, 1.3, higher_is_better=False) == "worse"  # slower TTFT
    assert ratio_verdict(0.7, 0.9, higher_is_better=False) == "better"
    assert ratio_verdict(0.7, 0.9, higher_is_better=True) == "worse"
    assert ratio_verdict(0.9, 1.1, higher_is_better=True) == "no difference"


def test_the_definitions_and_sources_are_the_cards_last_sections(built: BundleIndex) -> None:
    headings = re.findall(r"^## (.+)$", card(built), re.M)
    assert headings[-3:] == ["Reviews", "Appendix: definitions", "Appendix: sources"]


def test_a_value_that_does_not_count_shows_the_reason_beside_it(built: BundleIndex) -> None:
    c = built.comparison
    cell = next(x for x in c.cells if x.id == "natural-8192-c1")
    failed = cell.arms[1].model_copy(
        update={"disposition": "failed", "reason_code": "lane_died", "reason": "the lane exited."}
    )
    changed = cell.model_copy(update={"arms": [cell.arms[0], failed]})
    text = render_card(c.model_copy(update={"cells": [changed, *c.cells[1:]]}))
    row = next(x for x in text.splitlines() if "| effective prefill p50 |" in x)
    assert "| failed (lane_died): the lane exited |" in row
    assert "not accepted" not in text


def test_recipe_table_and_workload_are_from_the_frozen_matrix(built: BundleIndex) -> None:
    text = card(built)
    assert "| TP / DCP | 2 / 1 | 2 / 2 |" in text
    assert "| KV / speculation | FP8 DSMLA / none | FP8 / MTP3 |" in text
    assert "| Prefill batch token budget | 2,048 | 4,096 |" in text
    assert "| Configured context / sequences | 327,680 / 4 | 327,680 / 4 |" in text
    assert "| Boot-log quantization | exl3 | modelopt_fp4 |" in text
    assert "| natural-31600-c2 | natural | 31,600 | C2 | 4 | 0 | 512 | 0.6 / 0.95 | max |" in text


def test_failures_tickets_and_restoration_are_told_with_their_evidence(built: BundleIndex) -> None:
    text = card(built)
    assert "**controlled-8192-c1 / exl3-r11: failed** (contract_overrun)" in text
    assert "`cells/controlled-8192-c1/exl3-r11/attempt-1/journal.jsonl`" in text
    ticket = "tickets/glm53-sim-failed-contract-overrun.md"
    assert f"Ticket [`{ticket}`]({ticket})" in text
    assert "**controlled-8192-c1 / nvfp4-r2: blocked** (stop_policy)" in text
    assert "recorded outcome **restored**" in text
    assert "All 1 protected operator files were unchanged." in text


def test_no_protected_files_declared_is_a_warning_not_all_zero_unchanged(
    built: BundleIndex,
) -> None:
    comparison = Comparison.read(built.root / "comparison.json")
    restoration = comparison.restoration.model_copy(update={"protected_total": 0})
    text = render_card(comparison.model_copy(update={"restoration": restoration}))
    assert "All 0 protected" not in text
    assert "Warning: the matrix declared no protected operator files" in text


def test_caveats_are_generated_from_the_data(built: BundleIndex) -> None:
    codes = [c.code for c in Comparison.read(built.root / "comparison.json").caveats]
    expected = {"small_n", "queueing_included", "speculation_not_isolated", "simulator_lanes"}
    expected |= {"families_not_applicable", "partial_coverage", "complete_recipes"}
    assert expected <= set(codes)
    assert "restoration_not_proven" not in codes and "identity_unverified" not in codes
    text = card(built)
    assert "p50/p95 describe n=4 populations" in text
    assert "exl3-r11 none and nvfp4-r2 MTP3" in text
    assert "time_scale 10" in text


def test_definitions_are_written_verbatim(built: BundleIndex) -> None:
    body = DEFINITIONS.replace("## Metric definitions", "").strip()
    assert body in card(built)
    assert "Hyndman & Fan type 7" in card(built)


def test_each_caveat_appears_only_when_its_condition_holds(built: BundleIndex) -> None:
    c = built.comparison

    def codes(**changes: object) -> set[str]:
        parts = {"arms": c.arms, "cells": c.cells, "coverage": c.coverage}
        parts |= {"restoration": c.restoration, "not_applicable": c.not_applicable, **changes}
        return {x.code for x in caveats(**parts)}  # type: ignore[arg-type]

    same_recipe = [a.model_copy(update={"recipe": c.arms[0].recipe}) for a in c.arms]
    assert not {"speculation_not_isolated", "complete_recipes"} & codes(arms=same_recipe)
    unverified = c.arms[1].model_copy(
        update={"identity": c.arms[1].identity.model_copy(update={"verified": False})}
    )
    assert "identity_unverified" in codes(arms=[c.arms[0], unverified])
    complete = c.coverage.model_copy(update={"status": "complete"})
    assert "partial_coverage" not in codes(coverage=complete)
    assert "families_not_applicable" not in codes(not_applicable={})
    unrestored = c.restoration.model_copy(update={"verified": False, "problem": "no receipt"})
    assert "restoration_not_proven" in codes(restoration=unrestored)
    real = [a.model_copy(update={"simulator": None}) for a in c.arms]
    assert "simulator_lanes" not in codes(arms=real)
