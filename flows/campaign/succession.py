"""A successor campaign (``campaign.successor_of``) carries over a closed campaign's accepted
cells whose own frozen content is unchanged (``matrix.cell_content``).

When the successor first opens, before any lane is touched, the source must be closed in
the ledger and its bundle intact. A carried cell's attempt folders and lane runs are copied
to the same paths, checked against the source's ``SHA256SUMS``, with the source's frozen
matrix (its verdicts were judged under it); every other cell runs here, and
``carried.json`` says why. ``carried.json`` is written last: a run killed while copying
copies again when it resumes. In full: docs/flows.md, "Successor campaigns".
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import Session

from evidence.folder.layout import CELLS_DIR, SUMS_FILE, CampaignFolder, attempt_name
from evidence.folder.seal import require_verified
from evidence.folder.sums import read_sums
from faceoff.canonical import file_sha256
from faceoff.credentials import Credentials
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.cell_record import CELL_FILE, CellRecord
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.carried import (
    CARRIED_DIR,
    CARRIED_FILE,
    CarriedCell,
    CarriedRecord,
    CarriedRun,
    FreshCell,
    source_frozen_name,
)
from faceoff.formats.frozen_matrix import FrozenMatrix, read_frozen
from flows.campaign.context import CampaignContext
from flows.campaign.journal_index import index_journal
from ledger.campaigns import CLOSED, find_campaign, require_campaign
from ledger.cells import carry_attempt, latest_attempts, rerun_requested
from ledger.db import session_scope, utc
from ledger.tables import CampaignRow, CellRunRow
from matrix.cell import Cell
from matrix.cell_content import cell_key, changes_sentence, content_changes

ACCEPTED = "accepted"


def carry_over(context: CampaignContext) -> CarriedRecord | None:
    """Carry the source's unchanged accepted cells into the campaign folder, once; None for
    a campaign that names no source."""
    source = context.frozen.matrix.campaign.successor_of
    if source is None:
        return None
    if (context.campaign_dir / CARRIED_FILE).is_file():  # carried when the campaign opened
        return CarriedRecord.read(context.campaign_dir / CARRIED_FILE)
    with session_scope(context.engine) as session:
        row = _closed_source(session, source)
        folder = _sealed(source, Path(row.evidence_dir), context.tools.credentials)
        source_frozen = read_frozen(folder.frozen)
        latest = latest_attempts(session, row)
        rerun = rerun_requested(session, row)
        cells: list[CarriedCell] = []
        fresh: list[FreshCell] = []
        for cell in context.frozen.matrix.cells:
            runs = [latest.get((cell.id, arm)) for arm in _arms_of(context.frozen, cell)]
            why = _why_fresh(source_frozen, context.frozen, cell, runs, rerun)
            if why is None:
                cells.append(_carried(cell.id, context.frozen, [r for r in runs if r is not None]))
            else:
                fresh.append(FreshCell(cell_id=cell.id, reason=why))
        record = CarriedRecord(
            campaign=context.name,
            source=source,
            source_matrix_id=source_frozen.matrix_id,
            source_bundle=str(folder.root),
            source_frozen=source_frozen_name(source),
            cells=cells,
            fresh=fresh,
            files=_copy(folder, context.campaign_dir, _files_of(folder, cells, source)),
        )
        _index(session, context, latest, record)
    record.write(context.campaign_dir / CARRIED_FILE)
    return record


def check_source(engine: Engine, frozen: FrozenMatrix, credentials: Credentials) -> None:
    """Before a run starts anything: the source a successor names is closed in this ledger
    and its bundle is sealed, intact and its signature valid with ``credentials``
    (``faceoff run`` asks this before Prefect starts)."""
    source = frozen.matrix.campaign.successor_of
    if source is None:
        return
    with session_scope(engine) as session:
        _sealed(source, Path(_closed_source(session, source).evidence_dir), credentials)


def _closed_source(session: Session, source: str) -> CampaignRow:
    row = find_campaign(session, source)
    if row is None:
        raise FaceoffError(
            f"successor_of names campaign {source!r}, which the ledger does not know",
            where="campaign.successor_of",
            fix="name a closed campaign of this ledger (faceoff status lists them), or drop "
            "successor_of",
        )
    if row.status not in CLOSED:
        raise FaceoffError(
            f"successor_of names campaign {source!r}, which is {row.status}, not closed: its "
            "cells may still change",
            where="campaign.successor_of",
            fix=f"finish {source} first (faceoff run its matrix), then run this one",
        )
    return row


def _sealed(source: str, root: Path, credentials: Credentials) -> CampaignFolder:
    """The source's bundle, proven to match its ``SHA256SUMS``."""
    folder = CampaignFolder.at(root)
    if not folder.path(SUMS_FILE).is_file():  # `faceoff restore` of a closed campaign unseals it
        raise FaceoffError(
            f"the bundle of {source} is not sealed (no {SUMS_FILE}): a restoration since it "
            "closed reopened it",
            where=str(root),
            fix=f"run {source}'s matrix again with faceoff run: with nothing left to run, it "
            "only seals the bundle",
        )
    require_verified(folder, credentials, sealed=True)
    return folder


def _arms_of(frozen: FrozenMatrix, cell: Cell) -> list[str]:
    return [a.name for a in frozen.matrix.arm_order() if cell in frozen.matrix.cells_for(a)]


def _why_fresh(
    source_frozen: FrozenMatrix,
    frozen: FrozenMatrix,
    cell: Cell,
    runs: list[CellRunRow | None],
    rerun: set[tuple[str, str]],
) -> str | None:
    """Why the cell cannot be carried over from the source; None when it can."""
    source = source_frozen.matrix.campaign.name
    if all(c.id != cell.id for c in source_frozen.matrix.cells):
        return f"{source} has no cell {cell.id}"
    changes = content_changes(source_frozen, frozen, cell.id)
    if changes:
        return f"its frozen content differs from {source}'s: {changes_sentence(changes)}"
    for arm, run in zip(_arms_of(frozen, cell), runs, strict=True):
        if run is None:
            return f"{source} has no attempt of it on {arm}"
        if run.disposition != ACCEPTED:
            return (
                f"{arm}'s attempt {run.attempt} in {source} was {run.disposition} "
                f"({run.reason_code})"
            )
        if (cell.id, arm) in rerun:
            return f"a reviewer of {source} asked to rerun it on {arm}"
    return None


def _carried(cell_id: str, frozen: FrozenMatrix, runs: list[CellRunRow]) -> CarriedCell:
    return CarriedCell(
        cell_id=cell_id,
        cell_key=cell_key(frozen, cell_id),
        runs=[
            CarriedRun(
                arm=r.arm,
                attempt=r.attempt,
                reason_code=r.reason_code,
                started_at=utc(r.started_at) if r.started_at else None,
            )
            for r in runs
        ],
    )


def _files_of(folder: CampaignFolder, cells: list[CarriedCell], source: str) -> dict[str, str]:
    """Source path -> path here of every file to copy: each carried attempt folder, the lane
    runs they ran on, and the source's frozen matrix with those it carried cells under (a
    cell it carried itself was judged under its own source's)."""
    wanted = {folder.frozen.name: source_frozen_name(source)}
    tops = [folder.root / CARRIED_DIR]
    for cell in cells:
        for run in cell.runs:
            attempt = folder.root / CELLS_DIR / cell.cell_id / run.arm / attempt_name(run.attempt)
            lane_run = CellRecord.read(attempt / CELL_FILE).lane_run
            tops += [attempt, *([folder.root / lane_run] if lane_run else [])]
    for top in tops:
        for path in sorted(p for p in top.rglob("*") if p.is_file()):
            name = path.relative_to(folder.root).as_posix()
            wanted[name] = name
    return wanted


def _copy(folder: CampaignFolder, campaign_dir: Path, wanted: dict[str, str]) -> dict[str, str]:
    """Copy each file, refusing one that no longer matches the source's SHA256SUMS; returns
    path here -> sha256."""
    sums = read_sums(folder)
    copied = {}
    for name, here in wanted.items():
        source_path, target = folder.root / name, campaign_dir / here
        listed = sums.get(name)
        if listed is None or file_sha256(source_path) != listed:
            raise FaceoffError(
                f"{name} of the source bundle does not match its SHA256SUMS",
                where=str(folder.root),
                fix="audit the source campaign (faceoff audit) and restore its bundle",
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_path, target)
        if file_sha256(target) != listed:
            raise FaceoffError(
                f"the copy of {name} differs from the source's", where=str(target),
                fix="check the disk under the workdir, then run again",
            )  # fmt: skip
        copied[here] = listed
    return copied


def _index(
    session: Session,
    context: CampaignContext,
    latest: dict[tuple[str, str], CellRunRow],
    record: CarriedRecord,
) -> None:
    """Ledger rows of the carried attempts, as accepted as they were, and their journals."""
    campaign = require_campaign(session, context.name)
    for cell in record.cells:
        for run in cell.runs:
            folder = context.attempt_dir(cell.cell_id, run.arm, run.attempt)
            row = carry_attempt(
                session,
                campaign,
                latest[(cell.cell_id, run.arm)],
                note=f"carried over from {record.source} attempt {run.attempt}",
                artifacts_dir=str(folder),
            )
            index_journal(session, row, folder / JOURNAL_NAME)
