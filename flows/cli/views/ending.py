"""The end of ``faceoff run`` in at most 25 lines: what a person on call reads first.

The campaign's closure, the declared rule's outcome per candidate (with a rule) and under it
each criterion's headline figure (the ratio with its interval, and met, not met or
inconclusive, "descriptive only" where the interval may not decide: the card's own lines, from
``comparison.json``'s ruling, as ``faceoff export`` gives them), each arm's headline figures on
one cell as ``vllm bench serve`` ends with them (``flows.cli.views.headline``), the decision
(or how to record one), one row per cell with each
arm's disposition and each candidate's verdict, what each reason code of a cell run not
accepted means (a first night on a busy host ends blocked ``host_stall``: the reader is told
why), how restoration went, and where
``RESULT.md`` and ``report.html`` are. Everything else is in the bundle. Built from the
``CampaignResult`` and the bundle's ``comparison.json``; it computes no statistic.

A candidate's verdict is its pair's (``evidence.comparison.cells.pair_verdict``: better, worse,
mixed, no difference or descriptive) with the count of its ratios' own verdicts (better or
worse where the 95 % interval excludes 1, read in the metric's direction; descriptive where
too few requests stand behind it) and the TTFT ratio beside.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

from evidence.folder.layout import REPORT_FILE, RESULT_FILE
from evidence.views.card.render import decision_words, standing_review
from faceoff.formats.bundle.comparison import COMPARISON_FILE, CellEntry, Comparison
from faceoff.formats.reasons import MEANINGS, Disposition, Reason
from flows.campaign.closing import CampaignResult
from flows.cli.views.headline import headline_cell, headline_table

MAX_LINES = 25
MAX_REASONS = 3
NOT_ACCEPTED = (Disposition.FAILED, Disposition.BLOCKED)
REASON_CODES = frozenset(r.value for r in Reason)
HEADLINE = "ttft_s"
PADDING = 2  # spaces right of each column
VERDICT_FLOOR = len("no difference")  # a verdict's first words


def end_summary(result: CampaignResult) -> Group:
    comparison = Comparison.read(result.bundle / COMPARISON_FILE)
    tail = [*reason_lines(comparison), *restoration_lines(result), *path_lines(result.bundle)]
    rule = rule_lines(comparison)
    headline = headline_block(comparison)
    lines = 2 + headline[1].row_count if headline else 0  # its title, header and rows
    room = MAX_LINES - 3 - len(rule) - len(tail) - lines  # head, decision, the table's header
    return Group(
        Text(f"{result.campaign}: {result.closure.sentence}"),
        *(Text(line) for line in rule),
        *headline,
        Text(decision_line(comparison)),
        cells_table(comparison, room),
        *(Text(line) for line in tail),
    )


def headline_block(comparison: Comparison) -> tuple[Text, Table] | tuple[()]:
    """The headline figures' title and table (its header and a row per arm), or nothing."""
    found = headline_table(comparison)
    if found is None:
        return ()
    title, table = found
    return Text(title), table


def rule_lines(comparison: Comparison) -> list[str]:
    """The declared rule's outcome per candidate and each criterion's figure, as the card
    opens (without its markup)."""
    ruling = comparison.ruling
    if ruling is None:
        return []
    return [
        line
        for c in ruling.candidates
        for line in [c.headline.replace("**", ""), *(f"- {x.sentence}" for x in c.criteria)]
    ]


def decision_line(comparison: Comparison) -> str:
    """The card's own decision words; how to record one while none stands."""
    words = decision_words(comparison)
    if standing_review(comparison) is not None:
        return f"decision: {words}"
    return (
        f"decision: {words}; record it with `faceoff review {comparison.campaign} "
        "--decision promote|no_promotion|rerun_cells --note '…'`"
    )


def cells_table(comparison: Comparison, room: int) -> CellsTable | Group:
    """One row per cell; past ``room`` rows, the last row says how many more RESULT.md has."""
    shown = comparison.cells if len(comparison.cells) <= room else comparison.cells[: room - 1]
    headers, rows = cell_rows(comparison, shown)
    candidates = sum(1 for a in comparison.arms if a.role == "candidate")
    table = CellsTable(headers, rows, verdicts=candidates)
    if len(shown) == len(comparison.cells):
        return table
    return Group(table, Text(f"… {len(comparison.cells) - len(shown)} more cells in {RESULT_FILE}"))


def cell_rows(
    comparison: Comparison, cells: Sequence[CellEntry]
) -> tuple[list[str], list[list[str]]]:
    """The headers, and per cell its id, each arm's disposition and each candidate's verdict."""
    arms = [a.name for a in comparison.arms]
    candidates = [a.name for a in comparison.arms if a.role == "candidate"]
    incumbent = next((a.name for a in comparison.arms if a.role == "incumbent"), "incumbent")
    rows = [
        [cell.id, *(_disposition(cell, a) for a in arms), *(verdict(cell, c) for c in candidates)]
        for cell in cells
    ]
    return ["cell", *arms, *(f"{c} vs {incumbent}" for c in candidates)], rows


def end_record(result: CampaignResult) -> dict[str, object]:
    """The end summary's facts as data (``faceoff run --log-format json``): every cell, none
    cut."""
    comparison = Comparison.model_validate_json((result.bundle / COMPARISON_FILE).read_bytes())
    headers, rows = cell_rows(comparison, comparison.cells)
    return {
        "message": f"{result.campaign}: {result.closure.sentence}",
        "campaign": result.campaign,
        "complete": result.complete,
        "restored": result.restored,
        "rule": rule_lines(comparison),
        "headline_cell": headline_cell(comparison),
        "decision": decision_line(comparison),
        "cells": [dict(zip(headers, row, strict=True)) for row in rows],
        "reasons": reason_lines(comparison),
        "restoration": restoration_lines(result),
        "result_md": str(result.bundle / RESULT_FILE),
        "report_html": str(result.bundle / REPORT_FILE),
    }


@dataclass(frozen=True)
class CellsTable:
    """The cells table, laid out for the console it is printed on: every column stays, ids
    whole; where the rows are too wide, the widest text is cut first (verdicts, then long
    dispositions), a disposition never below its arm's name, a verdict (and its long
    header) not below the word that says it."""

    headers: list[str]
    rows: list[list[str]]
    verdicts: int  # the last columns: one verdict per candidate

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        natural = [max((len(r[n]) for r in self.rows), default=0) for n in range(len(self.headers))]
        natural = [max(w, len(h)) for w, h in zip(natural, self.headers, strict=True)]
        arms = len(self.headers) - self.verdicts
        floors = [natural[0], *(len(h) for h in self.headers[1:arms])]  # ids are never cut
        floors += [min(w, VERDICT_FLOOR) for w in natural[arms:]]
        room = options.max_width - PADDING * len(self.headers)
        table = Table(box=None, padding=(0, PADDING, 0, 0), show_edge=False)
        for header, width in zip(self.headers, fit_widths(natural, floors, room), strict=True):
            table.add_column(header, no_wrap=True, overflow="ellipsis", width=width)
        for row in self.rows:
            table.add_row(*row)
        yield table


def fit_widths(natural: list[int], floors: list[int], room: int) -> list[int]:
    """Column widths summing to at most ``room``: the widest column above its floor gives a
    character at a time; at the floors they stop (a console too narrow for the headers)."""
    widths = list(natural)
    while sum(widths) > room:
        cuttable = [n for n, (w, f) in enumerate(zip(widths, floors, strict=True)) if w > f]
        if not cuttable:
            break
        widths[max(cuttable, key=lambda n: widths[n])] -= 1
    return widths


def verdict(cell: CellEntry, candidate: str) -> str:
    pair = next((p for p in cell.pairs if p.candidate == candidate), None)
    ratios = [r for r in cell.ratios if r.candidate == candidate]
    if pair is None or not ratios:
        return f"not compared: {pair.reason}" if pair and pair.reason else "not compared"
    said = [r.verdict for r in ratios]
    counts = ", ".join(f"{s} {said.count(s)}" for s in ("better", "worse", "no difference"))
    if "descriptive" in said:  # too few requests for a verdict: say how many, not just zeros
        counts += f", descriptive {said.count('descriptive')}"
    head = next((r for r in ratios if r.metric == HEADLINE), None)
    shown = f"; TTFT {head.ratio:.2f}× ({head.low:.2f}–{head.high:.2f})" if head else ""
    return f"{pair.verdict} ({counts}){shown}"


def reason_lines(comparison: Comparison) -> list[str]:
    """What each reason code of a failed or blocked cell run means, once per code in the
    order met, at most ``MAX_REASONS`` (the guards' own sentence: ``faceoff.formats.reasons``)."""
    codes = dict.fromkeys(
        Reason(arm.reason_code)
        for cell in comparison.cells
        for arm in cell.arms
        if arm.disposition in NOT_ACCEPTED and arm.reason_code in REASON_CODES
    )
    return [f"{code}: {MEANINGS[code]}" for code in list(codes)[:MAX_REASONS]]


def restoration_lines(result: CampaignResult) -> list[str]:
    if not result.restorations:
        return [f"restoration: {result.earlier or 'no run of this campaign touched the incumbent'}"]
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
