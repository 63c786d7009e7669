"""Planned requests an interrupted attempt never journaled, named by a verdict.

A run that ends mid-cell (a full disk refusing journal lines, a kill of the client
with the orchestrator) leaves an attempt whose journal lacks some planned requests.
The resume runs the cell again in a new attempt; the interrupted one gets a
``verdict.json`` naming what it lacks, so that no planned request is silently
missing: each is journaled in some attempt or named there as not measured. Its
ledger row stays interrupted (pending for good), which is what makes the resume
run the cell again. An attempt with ``cell.json`` is judged by the guards, as
``faceoff audit`` recomputes it; one without gets a verdict of its own with the
same reason code.
"""

from __future__ import annotations

from pathlib import Path

from faceoff.errors import FaceoffError
from faceoff.formats.attempt.cell_record import CELL_FILE
from faceoff.formats.attempt.journal import JOURNAL_NAME, Phase
from faceoff.formats.attempt.request_plan import PLAN_NAME, RequestPlan
from faceoff.formats.attempt.verdict import VERDICT_FILE, Verdict
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.reasons import Disposition, Reason
from guards.dispositions import Disposed
from guards.judge import judge_cell, not_run
from workload.journal import read_journal

MAX_LISTED = 10


def unjournaled(folder: Path) -> tuple[int, list[int]]:
    """(planned, indices without a journal line) of the attempt's non-warmup requests;
    (0, []) without a readable plan: nothing was planned there."""
    try:
        plan = RequestPlan.read(folder / PLAN_NAME)
    except FaceoffError:
        return 0, []
    lines = {(o.phase, o.index) for o in read_journal(folder / JOURNAL_NAME).outcomes}
    planned = [r for r in plan.requests if r.phase is not Phase.WARMUP]
    return len(planned), [r.index for r in planned if (r.phase, r.index) not in lines]


def sentence(planned: int, missing: list[int], next_attempt: int) -> str:
    shown = ", ".join(str(i) for i in missing[:MAX_LISTED])
    more = f" and {len(missing) - MAX_LISTED} more" if len(missing) > MAX_LISTED else ""
    return (
        f"the run ended during this attempt and {len(missing)} of {planned} planned requests "
        f"have no journal line (requests {shown}{more}): not measured here; attempt "
        f"{next_attempt} runs the cell again"
    )


def name_unjournaled(
    folder: Path, frozen: FrozenMatrix, cell_id: str, arm: str, attempt: int
) -> str | None:
    """Write the interrupted attempt's verdict when planned requests lack a journal line
    (and it has none yet); the sentence naming them, else None."""
    planned, missing = unjournaled(folder)
    if not missing or (folder / VERDICT_FILE).exists():
        return None
    said = sentence(planned, missing, attempt + 1)
    verdict: Verdict
    if (folder / CELL_FILE).exists():
        verdict = judge_cell(folder, frozen)
    else:
        decision = Disposed(Disposition.FAILED, Reason.REQUESTS_NOT_TERMINAL, said)
        verdict = not_run(frozen, cell_id, arm, attempt, decision)
    verdict.write(folder / VERDICT_FILE)
    return said
