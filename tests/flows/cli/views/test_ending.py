"""`faceoff run`'s end summary over a real bundle's comparison: at most 25 lines, cells past
the room left to RESULT.md, each candidate's verdict counted from its ratio intervals."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from evidence.bundle.write import BundleIndex
from evidence.views.export import export_rows
from faceoff.formats.bundle.comparison import Comparison
from faceoff.formats.reasons import MEANINGS, Reason
from flows.campaign.closing import CampaignResult
from flows.cli.views.ending import MAX_LINES, cells_table, end_summary, fit_widths, verdict
from flows.cli.views.headline import headline_cell
from guards.dispositions import Closure


def summary_lines(comparison: Comparison, bundle: Path) -> list[str]:
    coverage = comparison.coverage
    closure = Closure(
        status=coverage.status, planned=coverage.planned, accepted=coverage.accepted,
        failed=coverage.failed, blocked=coverage.blocked, pending=coverage.pending,
        sentence=coverage.sentence,
    )  # fmt: skip
    result = CampaignResult(comparison.campaign, closure, bundle, card="")
    console = Console(record=True, width=200)
    console.print(end_summary(result))
    return console.export_text().rstrip("\n").splitlines()


def test_the_end_summary_names_each_cell_the_decision_and_the_report(built: BundleIndex) -> None:
    comparison = Comparison.read(built.root / "comparison.json")
    lines = summary_lines(comparison, built.root)
    assert lines[0] == f"glm53-sim: {comparison.coverage.sentence}"
    decision = next(n for n, line in enumerate(lines) if line.startswith("decision: "))
    assert lines[decision].startswith("decision: pending human review; record it with `faceoff")
    assert lines[decision + 1].split() == [
        "cell", "exl3-r11", "nvfp4-r2", "nvfp4-r2", "vs", "exl3-r11"
    ]  # fmt: skip
    for cell in comparison.cells:
        row = next(line for line in lines if line.startswith(cell.id + " "))
        if cell.ratios:
            said = [r.verdict for r in cell.ratios]
            counts = f"better {said.count('better')}, worse {said.count('worse')}"
            assert f"{cell.pairs[0].verdict} ({counts}" in row
        else:
            assert "not compared: " in row
    failed = {a.reason_code for c in comparison.cells for a in c.arms if a.disposition == "failed"}
    assert failed, "the glm53 campaign has a failed controlled cell"
    for code in failed:  # what each reason code means, the guards' own words
        assert f"{code}: {MEANINGS[Reason(code)]}" in lines
    assert lines[-3:] == [
        "restoration: no run of this campaign touched the incumbent",
        f"RESULT.md: {built.root / 'RESULT.md'}",
        f"report.html: {built.root / 'report.html'}",
    ]


def test_more_cells_than_lines_are_left_to_result_md(built: BundleIndex, tmp_path: Path) -> None:
    comparison = Comparison.read(built.root / "comparison.json")
    cells = comparison.cells
    many = [c.model_copy(update={"id": f"{c.id}-r{n}"}) for n in range(12) for c in cells]
    bigger = comparison.model_copy(update={"cells": many})
    bigger.write(tmp_path / "comparison.json")
    lines = summary_lines(bigger, tmp_path)
    assert len(lines) <= MAX_LINES, "\n".join(lines)
    shown = sum(1 for line in lines for c in many if line.startswith(c.id + " "))
    assert f"… {len(many) - shown} more cells in RESULT.md" in lines
    assert lines[-1] == f"report.html: {tmp_path / 'report.html'}"


def test_at_80_columns_every_arm_keeps_its_column(built: BundleIndex, tmp_path: Path) -> None:
    """A long disposition on a narrow terminal cuts text, never a column (ids stay whole)."""
    comparison = Comparison.read(built.root / "comparison.json")
    first, *rest = comparison.cells
    long_reason = [
        a.model_copy(update={"disposition": "blocked", "reason_code": "host_stall_and_more_words"})
        for a in first.arms
    ]
    narrow = comparison.model_copy(
        update={"cells": [first.model_copy(update={"arms": long_reason}), *rest]}
    )
    table = cells_table(narrow, room=MAX_LINES)
    console = Console(record=True, width=80)
    console.print(table)
    lines = console.export_text().splitlines()
    arms = [a.name for a in comparison.arms]
    assert lines[0].split()[: 1 + len(arms)] == ["cell", *arms], lines[0]
    assert all(len(line) <= 80 for line in lines), lines
    for cell in comparison.cells:
        assert any(line.startswith(cell.id + " ") for line in lines), cell.id
    assert "blocked (host_st" in lines[1]


def test_widths_are_cut_from_the_widest_column_down_to_the_headers() -> None:
    assert fit_widths([20, 30, 40], [20, 8, 8], room=90) == [20, 30, 40]
    assert fit_widths([20, 30, 40], [20, 8, 8], room=70) == [20, 25, 25]
    assert fit_widths([20, 30, 40], [20, 8, 8], room=10) == [20, 8, 8]  # the floors hold


def test_a_verdict_counts_its_descriptive_ratios(built: BundleIndex) -> None:
    """Ratios too thin for a verdict are counted, not left as zeros everywhere."""
    comparison = Comparison.read(built.root / "comparison.json")
    cell = next(c for c in comparison.cells if c.ratios)
    thin = [r.model_copy(update={"verdict": "descriptive"}) for r in cell.ratios]
    said = verdict(cell.model_copy(update={"ratios": thin}), cell.pairs[0].candidate)
    assert f"better 0, worse 0, no difference 0, descriptive {len(thin)})" in said, said


def test_each_arm_shows_the_headline_figures_of_one_matched_cell_as_export_gives_them(
    built: BundleIndex,
) -> None:
    comparison = Comparison.read(built.root / "comparison.json")
    lines = summary_lines(comparison, built.root)
    cell = headline_cell(comparison)
    assert cell is not None  # the glm53 campaign has cells both arms ran to acceptance
    entry = next(c for c in comparison.cells if c.id == cell)
    assert all(a.disposition == "accepted" for a in entry.arms)
    title = lines.index(
        f"headline figures, cell {cell} (one matched pair; every cell in RESULT.md):"
    )
    assert lines[title + 1].split()[:2] == ["arm", "n"]
    rows = [r for r in export_rows(comparison).rows if r.cell == cell]
    for n, arm in enumerate(a.arm for a in entry.arms):
        said = lines[title + 2 + n].split()
        ttft = next(r for r in rows if r.arm == arm and r.metric == "ttft_s")
        assert ttft.p50 is not None and ttft.p95 is not None
        assert said[:3] == [arm, str(ttft.n), f"{ttft.p50 * 1000:.1f}/{ttft.p95 * 1000:.1f}"]
        tps = next(r for r in rows if r.arm == arm and r.metric == "aggregate_output_tps")
        assert tps.mean is not None and f"{tps.mean:.1f}" in said
    assert len(lines) <= MAX_LINES
