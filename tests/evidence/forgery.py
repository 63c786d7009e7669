"""Forging a bundle as a careful forger would, with faceoff's own functions: a journal's TTFT
shaved, then the summary, the verdict, the comparison and the card recomputed from it, and
``SHA256SUMS`` hashed again, so that only a signature can tell. The signed-bundle tests and
``benchmarks.tamper`` use it."""

from __future__ import annotations

import json
from pathlib import Path

from evidence.attempt.summary import cell_slo, summarize_attempt
from evidence.bundle.write import comparison_of, write_views
from evidence.comparison.read import load_campaign
from evidence.folder.layout import CampaignFolder
from evidence.folder.sums import write_sums
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.summary import SUMMARY_FILE
from faceoff.formats.attempt.verdict import VERDICT_FILE
from faceoff.formats.frozen_matrix import read_frozen
from guards.judge import judge_cell

SHAVE_NS = 20_000_000  # 20 ms off a TTFT: small enough to look like noise


def shave_ttft(root: Path, attempt: str, shave_ns: int = SHAVE_NS) -> None:
    """Move the first answered request's first visible chunk of ``attempt`` (a folder under
    ``root``) ``shave_ns`` earlier (its first output too, when that was the same chunk),
    then write the attempt's summary and verdict again from the forged journal."""
    journal = root / attempt / JOURNAL_NAME
    lines = journal.read_text(encoding="utf-8").splitlines()
    index = next(i for i, line in enumerate(lines) if json.loads(line).get("first_content_ns"))
    forged = json.loads(lines[index])
    if forged.get("first_output_ns") == forged["first_content_ns"]:
        forged["first_output_ns"] -= shave_ns
    forged["first_content_ns"] -= shave_ns
    lines[index] = json.dumps(forged, separators=(",", ":"))
    journal.write_text("\n".join(lines) + "\n", encoding="utf-8")
    recompute_attempt(root, attempt)


def recompute_attempt(root: Path, attempt: str) -> None:
    """summary.json and verdict.json of ``attempt`` from its native files, as faceoff writes
    them (``cells/<cell>/<arm>/attempt-<n>``)."""
    folder = root / attempt
    frozen = read_frozen(CampaignFolder(root).frozen)
    cell_id, arm, number = folder.parts[-3], folder.parts[-2], int(folder.name.split("-")[1])
    slo = cell_slo(frozen.matrix, cell_id)
    summary = summarize_attempt(folder, arm=arm, attempt=number, slo=slo)
    summary.write(folder / SUMMARY_FILE, replace=True)
    judge_cell(folder, frozen).write(folder / VERDICT_FILE, replace=True)


def recompute_views(root: Path) -> None:
    """comparison.json, RESULT.md and report.html from the folder as it is now."""
    inputs = load_campaign(CampaignFolder(root))
    write_views(CampaignFolder(root), comparison_of(inputs), inputs)


def rehash(root: Path) -> None:
    """``SHA256SUMS`` written again over the folder as it is now (the seal left as it is)."""
    write_sums(CampaignFolder(root))
