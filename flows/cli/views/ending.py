"""The end of ``faceoff run`` in at most 25 lines: what a person on call reads first.

The campaign's closure, the declared rule's outcome per candidate (with a rule), the decision
(or how to record one), one row per cell with each
arm's disposition and each candidate's verdict, how restoration went, and where
``RESULT.md`` and ``report.html`` are. Everything else is in the bundle. Built from the
``CampaignResult`` and the bundle's ``comparison.json``; it computes no statistic.

A candidate's verdict is its pair's (``evidence.comparison.cells.pair_verdict``: better, worse,
mixed or no difference) with the count of its ratios' own verdicts (better or worse where
the 95 % interval excludes 1, read in the metric's direction) and the TTFT ratio beside.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text

from evidence.comparison.model import CellEntry, Comparison
from evidence.folder.layout import COMPARISON_FILE, REPORT_FILE, RESULT_FILE
from evidence.views.card.render import decision_words, standing_review
from flows.campaign.closing import CampaignResult

MAX_LINES = 25
HEADLINE = "ttft_s"


def end_summary(result: CampaignResult) -> Group:
    comparison = Comparison.model_validate_json((result.bundle / COMPARISON_FILE).read_bytes())
    tail = [*restoration_lines(result), *path_lines(result.bundle)]
    rule = rule_lines(comparison)
    room = MAX_LINES - 3 - len(rule) - len(tail)  # head, decision, the table's header
    return Group(
        Text(f"{result.campaign}: {result.closure.sentence}"),
        *(Text(line) for line in rule),
        Text(decision_line(comparison)),
        cells_table(comparison, room),
        *(Text(line) for line in tail),
    )


def rule_lines(comparison: Comparison) -> list[str]:
    """The declared rule's outcome per candidate, as the card opens (without its markup)."""
    ruling = comparison.ruling
    return [c.headline.replace("**", "") for c in ruling.candidates] if ruling else []


def decision_line(comparison: Comparison) -> str:
    """The card's own decision words; how to record one while none stands."""
    words = decision_words(comparison)
    if standing_review(comparison) is not None:
        return f"decision: {words}"
    return (
        f"decision: {words}; record it with `faceoff review {comparison.campaign} "
        "--decision promote|no_promotion|rerun_cells --note '…'`"
    )


def cells_table(comparison: Comparison, room: int) -> Table | Group:
    """One row per cell; past ``room`` rows, the last row says how many more RESULT.md has."""
    arms = [a.name for a in comparison.arms]
    candidates = [a.name for a in comparison.arms if a.role == "candidate"]
    incumbent = next((a.name for a in comparison.arms if a.role == "incumbent"), "incumbent")
    shown = comparison.cells if len(comparison.cells) <= room else comparison.cells[: room - 1]
    rows = [
        [cell.id, *(_disposition(cell, a) for a in arms), *(verdict(cell, c) for c in candidates)]
        for cell in shown
    ]
    headers = ["cell", *arms, *(f"{c} vs {incumbent}" for c in candidates)]
    table = Table(box=None, padding=(0, 2, 0, 0), show_edge=False)
    for number, header in enumerate(headers):
        # Ids and dispositions keep their width; a narrow terminal cuts the verdicts' ends.
        widest = max((len(r[number]) for r in rows), default=0)
        keep = number <= len(arms)
        table.add_column(header, no_wrap=True, overflow="ellipsis",
                         min_width=max(widest, len(header)) if keep else None)  # fmt: skip
    for row in rows:
        table.add_row(*row)
    if len(shown) == len(comparison.cells):
        return table
    return Group(table, Text(f"… {len(comparison.cells) - len(shown)} more cells in {RESULT_FILE}"))


def verdict(cell: CellEntry, candidate: str) -> str:
    pair = next((p for p in cell.pairs if p.candidate == candidate), None)
    ratios = [r for r in cell.ratios if r.candidate == candidate]
    if pair is None or not ratios:
        return f"not compared: {pair.reason}" if pair and pair.reason else "not compared"
    said = [r.verdict for r in ratios]
    counts = ", ".join(f"{s} {said.count(s)}" for s in ("better", "worse", "no difference"))
    head = next((r for r in ratios if r.metric == HEADLINE), None)
    shown = f"; TTFT {head.ratio:.2f}× ({head.low:.2f}–{head.high:.2f})" if head else ""
    return f"{pair.verdict} ({counts}){shown}"


def restoration_lines(result: CampaignResult) -> list[str]:
    if not result.restorations:
        return ["restoration: the incumbent was never touched"]
    return [f"restoration: {r.message}" for r in result.restorations]


def path_lines(bundle: Path) -> list[str]:
    return [f"{RESULT_FILE}: {bundle / RESULT_FILE}", f"{REPORT_FILE}: {bundle / REPORT_FILE}"]


def _disposition(cell: CellEntry, arm: str) -> str:
    found = next((a for a in cell.arms if a.arm == arm), None)
    if found is None:
        return "-"
    code = found.reason_code
    shown = str(found.disposition)
    return f"{shown} ({code})" if code and code != shown else shown
