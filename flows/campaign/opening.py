"""Opening a campaign run: freeze, ledger row, frozen file, and what a resume must do first.

A campaign whose name is in the ledger with the same matrix id is resumed: a
pending restoration runs first (a killed run may have left the incumbent down),
attempts a killed run left pending are marked interrupted (their journals
indexed, their folders kept), and the walk continues from the first cell run
without a terminal disposition (or named by a ``rerun_cells`` review). A changed
matrix under the same name is refused. A successor (``successor_of``) carries over its
source's unchanged accepted cells when it first opens (``flows.campaign.succession``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from pydantic import ValidationError

from evidence.bundle.write import reopen_bundle
from evidence.folder.layout import FROZEN_FILE, CampaignFolder
from evidence.folder.seal import lift_seal
from faceoff.artifact import first_error
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.carried import CarriedRecord
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze, read_frozen
from faceoff.formats.gpu_posture import GPU_START_FILE
from faceoff.formats.host_posture import START_FILE, collect_posture, write_posture
from flows.campaign.context import CampaignContext
from flows.campaign.gpu_posture import hardware_gpu_ids, record_campaign_gpus
from flows.campaign.journal_index import index_journal
from flows.campaign.restore import RestoreOutcome, restore_incumbent
from flows.campaign.spans import span_log
from flows.campaign.succession import carry_over
from flows.campaign.unjournaled import name_unjournaled
from lanes.restoration import RestoreTools, docker_for
from ledger.campaigns import CLOSED, RUNNING, SEALING, open_campaign, require_campaign
from ledger.cells import (
    TERMINAL,
    latest_attempts,
    mark_interrupted,
    rerun_requested,
    set_campaign_state,
)
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.hosts import this_host
from ledger.restoration import RESTORED, find_restoration
from matrix.aa import aa_twin
from matrix.arm import Arm
from matrix.campaign_plan import plan
from matrix.cell import Cell
from matrix.model import Matrix, changed_sources
from matrix.toml.reader import load_matrix

OPEN = "open"  # stopped before it closed; `faceoff run` resumes it


@dataclass(frozen=True)
class Opened:
    context: CampaignContext
    resumed: bool
    restored_first: RestoreOutcome | None = None  # the pending restoration a resume ran
    interrupted: list[str] = field(default_factory=list)  # "cell/arm attempt n" marked so
    carried: CarriedRecord | None = None  # a successor's cells carried over from its source
    was: str | None = None  # the campaign's status before this run (None: opened now)


def frozen_of(matrix_path: Path, *, dated: date | None = None, aa: bool = False) -> FrozenMatrix:
    """The frozen matrix; ``dated`` appends ``-YYYYMMDD`` to the campaign name (nightly runs:
    one campaign per night, and a rerun the same night resumes it); ``aa``: its A/A twin
    (``matrix.aa``)."""
    matrix = load_matrix(matrix_path)
    if aa:
        matrix = aa_twin(matrix, where=matrix_path)
    if dated is not None:
        matrix = renamed(matrix, f"{matrix.campaign.name}-{dated:%Y%m%d}", where=matrix_path)
    return freeze(matrix)


def renamed(matrix: Matrix, name: str, *, where: Path) -> Matrix:
    data = matrix.model_dump(mode="json")
    data["campaign"]["name"] = name
    try:
        return Matrix.model_validate(data)
    except ValidationError as exc:
        raise FaceoffError(
            f"the dated campaign name {name!r} is not valid: {first_error(exc)}",
            where=f"{where}: campaign.name",
            fix="shorten the campaign name (names are at most 63 characters)",
        ) from exc


def campaign_dir_of(workdir: Path, frozen: FrozenMatrix) -> Path:
    return (Path(workdir) / frozen.matrix.campaign.name).resolve()


def open_run(frozen: FrozenMatrix, *, workdir: Path, tools: RestoreTools) -> Opened:
    """Open or resume the campaign; on resume, restore first and mark interrupted attempts.
    The ledger's URL comes from the environment (``FACEOFF_DB_URL``), never a parameter;
    so does the host's name (``FACEOFF_HOST``, else the machine's)."""
    engine = open_ledger(resolve_url(None, workdir))
    campaign_dir = campaign_dir_of(workdir, frozen)
    refuse_changed_sources(frozen, campaign_dir)
    with session_scope(engine) as session:
        row, resumed = open_campaign(
            session,
            name=frozen.matrix.campaign.name,
            matrix_id=frozen.matrix_id,
            evidence_dir=campaign_dir,
            now=tools.now,
            host=this_host(os.environ),
        )
        was = row.status if resumed else None
        closed = row.status in CLOSED
        sealing = row.status == SEALING
    if resumed and (campaign_dir / FROZEN_FILE).is_file():
        if sealing:  # a run killed while sealing sealed nothing: what it left is no seal
            lift_seal(CampaignFolder.at(campaign_dir))
        else:  # a sealed bundle is proven intact, its signature valid, before the run adds
            reopen_bundle(campaign_dir, tools.credentials, sealed=closed)
    write_frozen(frozen, campaign_dir)
    write_posture(campaign_dir, START_FILE, collect_posture(tools.now))
    record_campaign_gpus(campaign_dir, hardware_gpu_ids(frozen.matrix), GPU_START_FILE, tools.now)
    context = CampaignContext(
        frozen,
        campaign_dir,
        Path(workdir),
        engine,
        tools,
        docker_for(frozen, tools),
        span_log(tools.environ),
    )
    restored = restore_if_pending(context) if resumed else None
    interrupted = close_interrupted(context)
    carried = carry_over(context)
    set_status(context, RUNNING)
    return Opened(context, resumed, restored, interrupted, carried, was)


def refuse_changed_sources(frozen: FrozenMatrix, campaign_dir: Path) -> None:
    """A resumed campaign whose dataset or trace file changed since it was frozen is refused,
    naming the file and both hashes (before the ledger's plain "the matrix changed")."""
    path = campaign_dir / FROZEN_FILE
    changed = changed_sources(read_frozen(path).matrix, frozen.matrix) if path.is_file() else []
    if changed:
        raise FaceoffError(
            "; ".join(changed),
            where=str(path),
            fix="restore the file the campaign was frozen with to resume it, or rename the "
            "campaign to start anew over the new file",
        )


def write_frozen(frozen: FrozenMatrix, campaign_dir: Path) -> None:
    """``matrix.frozen.json``, or proof that the one already there is this matrix."""
    path = campaign_dir / FROZEN_FILE
    if not path.exists():
        frozen.write(path)
        return
    refuse_other_matrix(frozen, campaign_dir)


def refuse_other_matrix(frozen: FrozenMatrix, campaign_dir: Path) -> None:
    """The campaign folder holds this matrix's files, or none yet."""
    path = campaign_dir / FROZEN_FILE
    if not path.is_file():
        return
    existing = read_frozen(path)
    if existing.matrix_id != frozen.matrix_id:
        raise FaceoffError(
            f"the folder holds campaign files of matrix {existing.short_id}, "
            f"but this matrix freezes to {frozen.short_id}",
            where=str(path),
            fix="rename the campaign, or move the old folder away (the ledger does not know it)",
        )


def restore_if_pending(context: CampaignContext) -> RestoreOutcome | None:
    """A killed run may have left the incumbent down: bring it back before anything else.
    The bundle stays unsealed: this run seals it when it closes."""
    with session_scope(context.engine) as session:
        restoration = find_restoration(session, require_campaign(session, context.name))
        pending = restoration is not None and restoration.state != RESTORED
    if not pending:
        return None
    return restore_incumbent(context.engine, context.name, context.tools, reseal=False)


def close_interrupted(context: CampaignContext) -> list[str]:
    """Mark attempts left pending as interrupted, index whatever their journals kept, and
    name in a verdict the planned requests they never journaled (``flows.campaign.unjournaled``)."""
    with session_scope(context.engine) as session:
        campaign = require_campaign(session, context.name)
        rows = mark_interrupted(session, campaign, context.tools.now)
        for row in rows:
            folder = context.attempt_dir(row.cell_id, row.arm, row.attempt)
            index_journal(session, row, folder / JOURNAL_NAME)
            said = name_unjournaled(folder, context.frozen, row.cell_id, row.arm, row.attempt)
            if said is not None:
                row.reason = f"{row.reason}; {said}"
                session.add(row)
        return [f"{row.cell_id}/{row.arm} attempt {row.attempt}" for row in rows]


def set_status(context: CampaignContext, status: str) -> None:
    """The campaign's status, counts unchanged (``open``: stopped before closing; resumable)."""
    with session_scope(context.engine) as session:
        campaign = require_campaign(session, context.name)
        set_campaign_state(session, campaign, status=status, now=context.tools.now)


def remaining_work(context: CampaignContext) -> list[tuple[Arm, list[Cell]]]:
    """Per pass, per arm in plan order (incumbent first), the cells without a terminal
    disposition and those a ``rerun_cells`` review asked for again. Replicate k of a cell
    runs in pass k, in separate windows (each pass brings every arm's lane up afresh); a
    campaign without replicates is one pass. The walk orders each pass's arms and cells
    (``flows.campaign.passes.walk_order``: ABBA across passes, alternating across cells)."""
    with session_scope(context.engine) as session:
        campaign = require_campaign(session, context.name)
        latest = latest_attempts(session, campaign)
        rerun = rerun_requested(session, campaign)
    per_arm = []
    for arm_plan in plan(context.frozen.matrix).arms:
        name = arm_plan.arm.name
        cells = [
            c
            for c in arm_plan.cells
            if (c.id, name) not in latest
            or latest[(c.id, name)].disposition not in TERMINAL
            or (c.id, name) in rerun
        ]
        per_arm.append((arm_plan.arm, cells))
    passes = sorted({c.pass_index for _, cells in per_arm for c in cells}) or [1]
    return [
        (arm, [c for c in cells if c.pass_index == index])
        for index in passes
        for arm, cells in per_arm
    ]
