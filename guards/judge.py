"""The guard's entry points: judge a cell attempt folder, a pair, or a cell that never ran.

``judge`` is pure (artifacts in, verdict out); ``judge_cell`` and ``judge_pair``
only add reading the native files. Writing ``verdict.json`` and the ledger row
is the flow's job:

    verdict = judge_cell(attempt_dir, frozen)
    verdict.write(attempt_dir / VERDICT_FILE)

``faceoff audit`` calls ``judge_cell`` on the bundle's folders and compares.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from collectors.aliases import AliasTable
from faceoff.canonical import file_sha256
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from faceoff.formats.attempt.verdict import FamilyVerdict, RuleResult, Verdict
from faceoff.formats.frozen_matrix import FrozenMatrix
from guards.artifacts import CellArtifacts, load_cell
from guards.dispositions import Disposed, decide, prerequisite
from guards.metric_guard import check_registry, metric_guard
from guards.pair import pair_integrity
from guards.validity import validity
from matrix.cell import Cell
from workload.journal import JournalContents


def _cell(frozen: FrozenMatrix, art: CellArtifacts) -> Cell:
    record = art.record
    if record.matrix_id != frozen.matrix_id:
        raise FaceoffError(
            f"cell.json was run under matrix {record.matrix_id[:12]}, not {frozen.short_id}",
            where=f"cell {record.cell_id} arm {record.arm} attempt {record.attempt}",
            fix="judge it with the frozen matrix of its own campaign",
        )
    for cell in frozen.matrix.cells:
        if cell.id == record.cell_id:
            return cell
    raise FaceoffError(
        f"cell {record.cell_id!r} is not in the frozen matrix {frozen.short_id}",
        where="cell.json",
        fix="judge it with the frozen matrix of its own campaign",
    )


def judge(art: CellArtifacts, frozen: FrozenMatrix) -> Verdict:
    """The verdict of one cell attempt (pure)."""
    cell = _cell(frozen, art)
    check_registry(frozen.registry)
    blocked = prerequisite(art)
    if blocked is not None:
        return _verdict(art, frozen, blocked, families=[], rules=[])
    thresholds = frozen.matrix.thresholds
    families = metric_guard(art, frozen.registry, thresholds)
    rules = validity(art, cell, thresholds)
    return _verdict(art, frozen, decide(families, rules), families=families, rules=rules)


def _verdict(
    art: CellArtifacts,
    frozen: FrozenMatrix,
    decision: Disposed,
    *,
    families: list[FamilyVerdict],
    rules: list[RuleResult],
) -> Verdict:
    record = art.record
    return Verdict(
        campaign=record.campaign,
        matrix_id=frozen.matrix_id,
        cell_id=record.cell_id,
        arm=record.arm,
        attempt=record.attempt,
        disposition=decision.disposition,
        reason=decision.reason,
        sentence=decision.sentence,
        families=families,
        rules=rules,
        inputs=dict(sorted(art.inputs.items())),
    )


def judge_cell(
    folder: Path,
    frozen: FrozenMatrix,
    *,
    table: AliasTable | None = None,
    journal: JournalContents | None = None,
    digest_of: Callable[[Path], str] = file_sha256,
) -> Verdict:
    """Read a cell attempt folder's native artifacts (``journal``: already read) and judge them.

    ``digest_of``: a file's sha256, for the verdict's inputs (the audit's hashes each once)."""
    return judge(load_cell(folder, table, journal=journal, digest_of=digest_of), frozen)


def not_run(
    frozen: FrozenMatrix, cell_id: str, arm: str, attempt: int, decision: Disposed
) -> Verdict:
    """The verdict of a cell blocked before it ran (stop policy, lane never ready)."""
    return Verdict(
        campaign=frozen.matrix.campaign.name,
        matrix_id=frozen.matrix_id,
        cell_id=cell_id,
        arm=arm,
        attempt=attempt,
        families=[],
        rules=[],
        disposition=decision.disposition,
        reason=decision.reason,
        sentence=decision.sentence,
        inputs={},
    )


def judge_pair(incumbent: Path, candidate: Path) -> RuleResult:
    """Pair integrity of two arms' attempt folders of one cell, from their requests.json."""
    return pair_integrity(
        RequestPlan.read(Path(incumbent) / PLAN_NAME), RequestPlan.read(Path(candidate) / PLAN_NAME)
    )
