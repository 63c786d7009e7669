"""Reading a campaign folder into typed inputs: the I/O edge of the comparison.

Everything the comparison, the card and the report show is loaded here from the
native artifacts (and the recomputable ones beside them); the builders that
follow are pure functions of what this module returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from evidence.attempt.pilot import read_pilot
from evidence.attempt.roles import counted
from evidence.comparison.quality import LoadedResult, read_quality
from evidence.comparison.standing import Standing, read_standing
from evidence.folder.bootfacts import boot_facts
from evidence.folder.layout import AttemptDir, CampaignFolder
from faceoff.bounded import RECORD_CAP, read_text
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.journal import JOURNAL_NAME, Phase, RequestOutcome, Status
from faceoff.formats.attempt.request_plan import PLAN_NAME, DatasetSource, RequestPlan, TraceSource
from faceoff.formats.attempt.summary import SUMMARY_FILE, RequestSummary
from faceoff.formats.attempt.telemetry import TELEMETRY_FILE, TelemetrySummary
from faceoff.formats.attempt.verdict import RuleResult
from faceoff.formats.bundle.lane_facts import BootFacts
from faceoff.formats.carried import CarriedRecord, read_carried
from faceoff.formats.frozen_matrix import FrozenMatrix, read_frozen
from faceoff.formats.gpu_posture import LANE_GPU_FILE, GpuPosture, read_gpu_posture
from faceoff.formats.host_posture import PostureView, read_posture
from faceoff.formats.lane import BOOT_LOG_FILE, IDENTITY_FILE, LANE_FILE, IdentityRecord, LaneRecord
from faceoff.formats.passes import PassRecord, read_passes
from faceoff.formats.pilot import PilotRecord
from faceoff.formats.preflight import PreflightReport, read_reports
from faceoff.formats.receipt import RECEIPT_FILE, Receipt, verify_receipt
from guards.judge import judge_pair
from matrix.campaign_plan import PairKey, plan
from matrix.cell import LengthRule
from workload.journal import read_journal
from workload.records import WARMUP_DIR


@dataclass(frozen=True)
class AttemptInputs:
    where: AttemptDir
    summary: RequestSummary | None
    telemetry: TelemetrySummary | None
    standing: Standing

    def scored_ok(self) -> list[RequestOutcome]:
        """The journal's scored ok requests (``read_journal``: a cell's two journals are
        kept while its entry asks for them again, and each line its metrics)."""
        return scored_ok(read_journal(self.where.path / JOURNAL_NAME))

    def scored(self) -> list[RequestOutcome]:
        """The journal's scored requests, whatever their status (a window figure counts
        every request sent in the window)."""
        return [o for o in read_journal(self.where.path / JOURNAL_NAME) if o.phase is Phase.SCORED]

    def counted(self, length_rule: LengthRule) -> list[RequestOutcome]:
        """The journal's scored requests a statistic counts under the cell's length rule
        (``evidence.attempt.roles.counted``)."""
        return counted(read_journal(self.where.path / JOURNAL_NAME), length_rule)

    def plan_source(self) -> DatasetSource | TraceSource | None:
        """The rows a dataset or trace cell's plan drew (``requests.json``); None for
        synthetic prompts, or where the attempt has no plan."""
        path = self.where.path / PLAN_NAME
        return RequestPlan.read(path).source if path.is_file() else None


@dataclass(frozen=True)
class PastAttempt:
    """Any attempt of a cell run, standing or not: where it is and how it was judged."""

    where: AttemptDir
    standing: Standing


@dataclass(frozen=True)
class LaneInputs:
    arm: str
    run: str  # lanes/<arm>/<run>, relative to the campaign folder
    record: LaneRecord | None
    identity: IdentityRecord | None
    boot: BootFacts | None
    warmups: tuple[RequestOutcome, ...] = ()  # the arm's warmups after this start
    gpu_posture: GpuPosture | None = None  # its GPUs when it was ready (gpu-posture.json)


@dataclass(frozen=True)
class ReceiptInputs:
    present: bool
    receipt: Receipt | None  # None when missing or when it does not verify
    problem: str | None  # why it is missing or does not verify


@dataclass(frozen=True)
class CampaignInputs:
    folder: CampaignFolder
    frozen: FrozenMatrix
    attempts: dict[tuple[str, str], AttemptInputs]  # (cell, arm) -> the attempt that stands
    history: dict[tuple[str, str], list[PastAttempt]]  # (cell, arm) -> every attempt, oldest first
    lanes: dict[str, list[LaneInputs]]  # arm -> its lane runs, in order
    receipt: ReceiptInputs
    pairs: Mapping[PairKey, RuleResult]  # pair integrity where both arms' plans exist
    quality: dict[tuple[str, str], LoadedResult]  # (import, arm) -> its copy in the bundle
    posture: PostureView | None = None  # the host's posture at the start and the end
    carried: CarriedRecord | None = None  # a successor's cells carried over (carried.json)
    preflight: tuple[PreflightReport, ...] = ()  # each run's preflight, oldest first
    pilot: PilotRecord | None = None  # what the pilot found before the scored cells
    passes: PassRecord | None = None  # the passes run and skipped (passes.json)


def scored_ok(outcomes: Iterable[RequestOutcome]) -> list[RequestOutcome]:
    """The scored ok requests, which the comparison's ratios are taken over."""
    return [o for o in outcomes if o.phase is Phase.SCORED and o.status is Status.OK]


def load_campaign(folder: CampaignFolder) -> CampaignInputs:
    frozen = read_frozen(folder.frozen)
    attempts = {key: load_attempt(a) for key, a in folder.latest().items()}
    return CampaignInputs(
        folder=folder,
        frozen=frozen,
        attempts=attempts,
        history=load_history(folder),
        lanes={
            arm.name: [load_lane(folder, run) for run in folder.lane_runs(arm.name)]
            for arm in frozen.matrix.arm_order()
        },
        receipt=load_receipt(folder),
        pairs=PairChecks(plan(frozen.matrix).pairs, attempts),
        quality=read_quality(folder.root, frozen.matrix.quality),
        posture=read_posture(folder.root),
        carried=read_carried(folder.root),
        preflight=tuple(read_reports(folder.root)),
        pilot=read_pilot(folder.root),
        passes=read_passes(folder.root),
    )


def load_history(folder: CampaignFolder) -> dict[tuple[str, str], list[PastAttempt]]:
    found: dict[tuple[str, str], list[PastAttempt]] = {}
    for where in folder.attempts():  # ordered by cell, arm and attempt number
        found.setdefault((where.cell_id, where.arm), []).append(
            PastAttempt(where, read_standing(where))
        )
    return found


class PairChecks(Mapping[PairKey, RuleResult]):
    """Each pair's integrity (``guards.judge.judge_pair``) where both arms' plans exist,
    judged when first asked: the comparison asks one cell at a time, while that cell's
    plans are the ones last read (``faceoff.recent``)."""

    def __init__(
        self, pairs: tuple[PairKey, ...], attempts: dict[tuple[str, str], AttemptInputs]
    ) -> None:
        self._folders: dict[PairKey, tuple[Path, Path]] = {}
        for pair in pairs:
            incumbent = attempts.get((pair.cell_id, pair.incumbent))
            candidate = attempts.get((pair.cell_id, pair.candidate))
            if incumbent is None or candidate is None:
                continue
            if all((a.where.path / PLAN_NAME).is_file() for a in (incumbent, candidate)):
                self._folders[pair] = (incumbent.where.path, candidate.where.path)
        self._judged: dict[PairKey, RuleResult] = {}

    def __getitem__(self, pair: PairKey) -> RuleResult:
        if pair not in self._judged:
            self._judged[pair] = judge_pair(*self._folders[pair])
        return self._judged[pair]

    def __iter__(self) -> Iterator[PairKey]:
        return iter(self._folders)

    def __len__(self) -> int:
        return len(self._folders)


def load_attempt(where: AttemptDir) -> AttemptInputs:
    summary_path = where.path / SUMMARY_FILE
    telemetry_path = where.path / TELEMETRY_FILE
    return AttemptInputs(
        where=where,
        summary=RequestSummary.read(summary_path) if summary_path.is_file() else None,
        telemetry=TelemetrySummary.read(telemetry_path) if telemetry_path.is_file() else None,
        standing=read_standing(where),
    )


def load_lane(folder: CampaignFolder, run_dir: Path) -> LaneInputs:
    record_path, identity_path = run_dir / LANE_FILE, run_dir / IDENTITY_FILE
    boot_path = run_dir / BOOT_LOG_FILE
    boot_text = read_text(boot_path, RECORD_CAP) if boot_path.is_file() else None
    return LaneInputs(
        arm=run_dir.parent.name,
        run=run_dir.relative_to(folder.root).as_posix(),
        record=LaneRecord.read(record_path) if record_path.is_file() else None,
        identity=IdentityRecord.read(identity_path) if identity_path.is_file() else None,
        boot=boot_facts(boot_text) if boot_text is not None else None,
        warmups=tuple(read_journal(run_dir / WARMUP_DIR / JOURNAL_NAME).outcomes),
        gpu_posture=read_gpu_posture(run_dir / LANE_GPU_FILE),
    )


def load_receipt(folder: CampaignFolder) -> ReceiptInputs:
    if not folder.receipt.is_file():
        return ReceiptInputs(False, None, "no receipt.json: restoration has not completed")
    try:
        return ReceiptInputs(True, verify_receipt(folder.receipt), None)
    except FaceoffError as exc:  # its own sentence; the absolute path would tie it to one host
        return ReceiptInputs(True, None, f"{RECEIPT_FILE}: {exc.what}")
