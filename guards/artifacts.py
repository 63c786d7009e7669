"""The native artifacts of one cell attempt, read once, for the pure rules to judge.

``load_cell`` is the guards' only reader: ``cell.json``, ``requests.json``,
``journal.jsonl``, the sample files (GPU samples kept for the GPU rules) and the
host-stall monitor's
``stalls.jsonl``; the telemetry summary is recomputed from the samples
(``collectors.telemetry.summarize``) rather than trusted from ``telemetry.json``,
so a verdict depends on native files alone. Every file read
is hashed into ``inputs``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from collectors.aliases import AliasTable, vllm_aliases
from collectors.stall_log import StallLog
from collectors.telemetry import CellSamples, load_cell_samples, summarize
from faceoff.canonical import file_sha256
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.cell_record import CELL_FILE, CellRecord
from faceoff.formats.attempt.collector_samples import EngineSample, GpuSample
from faceoff.formats.attempt.journal import JOURNAL_NAME, Phase, RequestOutcome, Status
from faceoff.formats.attempt.request_plan import PLAN_NAME, PlannedRequest, RequestPlan
from faceoff.formats.attempt.stalls import ENGINE_FILE, GPU_FILE, HOST_FILE, STALLS_FILE
from faceoff.formats.attempt.telemetry import TelemetrySummary
from faceoff.result import Maybe
from workload.journal import JournalContents, read_journal

# A cell has scored requests or, a needle search, probes; never both.
JUDGED_PHASES = frozenset({Phase.SCORED, Phase.PROBE})
NATIVE_FILES = (
    CELL_FILE,
    PLAN_NAME,
    JOURNAL_NAME,
    ENGINE_FILE,
    GPU_FILE,
    HOST_FILE,
    STALLS_FILE,
)


@dataclass(frozen=True)
class CellArtifacts:
    """Everything the rules read about one cell attempt; built by ``load_cell`` or by tests."""

    record: CellRecord
    plan: RequestPlan | None
    plan_error: str | None
    journal: JournalContents
    telemetry: TelemetrySummary | None
    engine: Sequence[EngineSample] = ()
    inputs: dict[str, str] = field(default_factory=dict)
    stalls: StallLog | None = None  # None: no monitor ran (no stalls.jsonl)
    gpu: Sequence[GpuSample] | None = None  # None: the arm has no GPU ids (no gpu.jsonl)

    @property
    def outcomes(self) -> list[RequestOutcome]:
        return self.journal.outcomes

    @cached_property  # each of some twenty rules asks: made once
    def scored(self) -> list[RequestOutcome]:
        """Scored lines of this attempt's plan, or a needle search's probes: the requests
        the cell is judged by (foreign lines are the terminal rule's business)."""
        return [o for o in self.own_lines if o.phase in JUDGED_PHASES]

    @cached_property
    def scored_ok(self) -> list[RequestOutcome]:
        return [o for o in self.scored if o.status is Status.OK]

    @cached_property  # the decode families' sample: each of three asks
    def scored_ok_decoding(self) -> list[RequestOutcome]:
        """Scored ok requests that ask for two tokens or more, so may have a decode interval."""
        return [o for o in self.scored_ok if asks_for_decode(o)]

    @cached_property
    def own_lines(self) -> list[RequestOutcome]:
        """Journal lines written for this plan, arm and attempt."""
        return [o for o in self.outcomes if self.owns(o)]

    @cached_property
    def plan_sha256(self) -> str | None:
        """The hash the client wrote on every line it ran from this plan."""
        return None if self.plan is None else self.plan.sha256()

    def owns(self, outcome: RequestOutcome) -> bool:
        record = self.record
        return outcome.of_attempt(record.cell_id, record.arm, record.attempt, self.plan_sha256)

    def planned(self, phase: Phase) -> list[PlannedRequest]:
        return [] if self.plan is None else self.plan.phase(phase)

    def sample(self, seq: int | None) -> EngineSample | None:
        """The engine sample with this sequence number (the deltas' baseline or final)."""
        return next((s for s in self.engine if s.seq == seq), None)


def asks_for_decode(r: RequestOutcome) -> bool:
    return r.max_tokens >= 2


def load_cell(
    folder: Path,
    table: AliasTable | None = None,
    *,
    journal: JournalContents | None = None,
    digest_of: Callable[[Path], str] = file_sha256,
) -> CellArtifacts:
    """Read one cell attempt folder; a missing ``cell.json`` is an error, the rest is judged.

    ``journal``: its ``journal.jsonl`` when the caller has read it already.
    """
    folder = Path(folder)
    if not (folder / CELL_FILE).exists():
        raise FaceoffError(
            f"{CELL_FILE} is missing; the guard cannot tell which cell, arm and attempt this is",
            where=str(folder),
            fix="judge a cell attempt folder written by the campaign flow",
        )
    record = CellRecord.read(folder / CELL_FILE)
    plan = _plan(folder / PLAN_NAME)
    samples = load_cell_samples(folder)
    return CellArtifacts(
        record=record,
        plan=plan.value,
        plan_error=plan.reason,
        journal=journal if journal is not None else read_journal(folder / JOURNAL_NAME),
        telemetry=_telemetry(record, samples, table or vllm_aliases()),
        engine=[s for s in samples.engine if s.ok],
        stalls=samples.stalls,
        gpu=samples.gpu,
        inputs={
            name: digest_of(folder / name) for name in NATIVE_FILES if (folder / name).exists()
        },
    )


def _telemetry(
    record: CellRecord, samples: CellSamples, table: AliasTable
) -> TelemetrySummary | None:
    """The summary telemetry.json holds, recomputed; None without a window to judge over."""
    if record.window is None:
        return None
    return summarize(samples, window=record.window, settings=record.collector_settings, table=table)


def _plan(path: Path) -> Maybe[RequestPlan]:
    try:
        return Maybe.of(RequestPlan.read(path))
    except FaceoffError as exc:
        return Maybe.lacking(exc.message)
