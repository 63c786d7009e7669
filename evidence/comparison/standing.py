"""A cell attempt's standing, as the guards judged it (``verdict.json``) and the flow saw it.

The evidence package never judges: it reads the guards' verdict for the
disposition and reason, and the flow's ``cell.json`` for the OOM observation.
An attempt folder without a verdict is pending.
"""

from __future__ import annotations

from dataclasses import dataclass

from evidence.folder.layout import AttemptDir
from faceoff.formats.attempt.cell_record import CELL_FILE, CellRecord
from faceoff.formats.attempt.verdict import VERDICT_FILE, Verdict
from faceoff.formats.reasons import Disposition


@dataclass(frozen=True)
class Standing:
    disposition: Disposition
    reason_code: str | None
    reason: str | None
    oom: bool | None  # None where the lane's end was not observed
    verdict: Verdict | None
    record: CellRecord | None


NOT_RUN = Standing(
    Disposition.PENDING, None, None, None, None, None
)  # a planned run with no folder yet


def read_standing(where: AttemptDir) -> Standing:
    verdict_path, record_path = where.path / VERDICT_FILE, where.path / CELL_FILE
    verdict = Verdict.read(verdict_path) if verdict_path.is_file() else None
    record = CellRecord.read(record_path) if record_path.is_file() else None
    oom = record.lane_end.oom if record is not None and record.lane_end is not None else None
    if verdict is None:
        return Standing(Disposition.PENDING, None, None, oom, None, record)
    return Standing(
        disposition=verdict.disposition,
        reason_code=verdict.reason.value,
        reason=verdict.sentence,
        oom=oom,
        verdict=verdict,
        record=record,
    )
