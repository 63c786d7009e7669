"""The GPU rules: did the arm's GPUs run at full speed, alone, and without errors?

Three rules over ``gpu.jsonl`` (the GPU analogue of ``host_stall``), each blocking:
the numbers of a throttled, shared or failing GPU describe the machine, not the recipe,
and must not trigger the stop policy.

- ``gpu_throttled``: the share of the window's readings of a GPU with a thermal or
  power-delivery slowdown among NVML's clock-event reasons (``collectors.gpu.clock_events``;
  the software power cap is reported, not judged) above ``max_gpu_slowdown_share``,
  for the worst GPU, blocks the cell; any slowdown short of that flags it.
- ``gpu_contended``: a compute process that is not the lane's (``GpuProcess.lane``
  False) on one of the arm's GPUs during the window blocks the cell; a process whose
  owner could not be told flags it.
- ``gpu_errors``: Xid critical errors or uncorrected ECC errors that rose over the
  window block the cell; a rise of corrected ECC errors flags it.

The window's readings are the samples taken inside it; a window shorter than the GPU
cadence is judged by the samples on either side. Counters rise between the last
sample at or before the window's start and the first at or after its end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from collectors.gpu.clock_events import SW_POWER_CAP, reason_names
from faceoff.formats.attempt.collector_samples import GpuReading, GpuSample, ReadStatus
from faceoff.formats.attempt.stalls import CellWindow
from faceoff.formats.attempt.verdict import Evidence, RuleResult
from faceoff.formats.reasons import Reason
from guards.artifacts import CellArtifacts
from guards.outcomes import failed, not_applicable, not_evaluated, passed
from matrix.cell import Cell
from matrix.thresholds import Thresholds

NO_GPU = "the arm has no GPU ids (no gpu.jsonl)"
MAX_LISTED = 10


def window_samples(samples: Sequence[GpuSample], window: CellWindow) -> list[GpuSample]:
    """Readable samples inside the window; for a window between two ticks, the two."""
    ok = sorted((s for s in samples if s.status is not ReadStatus.UNAVAILABLE), key=_at)
    inside = [s for s in ok if window.start_ns <= s.actual_ns <= window.end_ns]
    if inside:
        return inside
    before = [s for s in ok if s.actual_ns < window.start_ns][-1:]
    after = [s for s in ok if s.actual_ns > window.end_ns][:1]
    return before + after


def _at(sample: GpuSample) -> int:
    return sample.actual_ns


def _readings(samples: Sequence[GpuSample]) -> dict[int, list[GpuReading]]:
    by_device: dict[int, list[GpuReading]] = {}
    for sample in samples:
        for reading in sample.devices:
            by_device.setdefault(reading.index, []).append(reading)
    return by_device


def _judged_window(art: CellArtifacts, code: Reason) -> list[GpuSample] | RuleResult:
    if art.gpu is None:
        return not_applicable(code, NO_GPU)
    window = art.record.window
    if window is None:
        return not_evaluated(code, "cell.json has no window: no scored request was sent")
    found = window_samples(art.gpu, window)
    if not found:
        return not_evaluated(code, f"no readable GPU sample near the window: {_why(art.gpu)}")
    return found


def _why(samples: Sequence[GpuSample]) -> str:
    return next((s.error for s in samples if s.error), "no sample at all")


# --- gpu_throttled ----------------------------------------------------------------------


@dataclass(frozen=True)
class Slowdown:
    device: int
    read: int  # readings with clock-event reasons
    slowed: int
    power_capped: int
    reasons: list[str]
    min_clock_ratio: float | None

    @property
    def share(self) -> float:
        return self.slowed / self.read if self.read else 0.0


def slowdown(device: int, readings: Sequence[GpuReading]) -> Slowdown:
    masks = [r.clock_event_reasons for r in readings if r.clock_event_reasons is not None]
    slowed = [r for r in readings if r.slowed_down]
    ratios = [
        r.sm_clock_mhz / r.max_sm_clock_mhz
        for r in slowed
        if r.sm_clock_mhz is not None and r.max_sm_clock_mhz
    ]
    seen = sorted({name for r in slowed for name in reason_names(r.clock_event_reasons or 0)})
    return Slowdown(
        device=device,
        read=len(masks),
        slowed=len(slowed),
        power_capped=sum(1 for m in masks if m & SW_POWER_CAP),
        reasons=seen,
        min_clock_ratio=min(ratios) if ratios else None,
    )


def gpu_throttled(art: CellArtifacts, _: Cell, t: Thresholds) -> RuleResult:
    code = Reason.GPU_THROTTLED
    found = _judged_window(art, code)
    if isinstance(found, RuleResult):
        return found
    devices = [slowdown(i, rs) for i, rs in sorted(_readings(found).items())]
    if not any(d.read for d in devices):
        return not_evaluated(code, "NVML gave no clock-event reasons for the arm's GPUs")
    worst = max(devices, key=lambda d: (d.share, d.slowed))
    ratio = worst.min_clock_ratio
    clock = "" if ratio is None else f", SM clock down to {ratio:.0%} of its maximum"
    detail = (
        f"GPU {worst.device} slowed down (thermal or power delivery) in {worst.slowed} of "
        f"{worst.read} readings in the window ({worst.share:.0%}"
        f"{': ' + ', '.join(worst.reasons) if worst.reasons else ''}{clock}); the matrix "
        f"blocks above {t.max_gpu_slowdown_share:.0%}"
    )
    judge = failed if worst.share > t.max_gpu_slowdown_share else passed
    flagged = judge is passed and worst.slowed > 0
    return judge(
        code,
        f"flagged: {detail}" if flagged else detail,
        worst_device=worst.device,
        readings=worst.read,
        slowed=worst.slowed,
        slowdown_share=round(worst.share, 6),
        reasons=worst.reasons,
        min_sm_clock_ratio=None if ratio is None else round(ratio, 4),
        power_capped_readings=sum(d.power_capped for d in devices),
        max_gpu_slowdown_share=t.max_gpu_slowdown_share,
        simulated=any(s.simulated for s in found),
        flagged=flagged,
    )


# --- gpu_contended ----------------------------------------------------------------------


def gpu_contended(art: CellArtifacts, _: Cell, __: Thresholds) -> RuleResult:
    code = Reason.GPU_CONTENDED
    found = _judged_window(art, code)
    if isinstance(found, RuleResult):
        return found
    listed = [(r.index, p) for s in found for r in s.devices for p in r.processes or []]
    if all(r.processes is None for s in found for r in s.devices):
        return not_evaluated(code, "NVML listed no compute processes for the arm's GPUs")
    foreign = sorted({(i, p.pid) for i, p in listed if p.lane is False})
    unknown = sorted({p.pid for _, p in listed if p.lane is None})
    evidence: Evidence = {
        "foreign_pids": sorted({pid for _, pid in foreign})[:MAX_LISTED],
        "foreign_on_devices": sorted({i for i, _ in foreign}),
        "foreign_max_bytes": max(
            (p.used_bytes or 0 for _, p in listed if p.lane is False), default=0
        ),
        "unknown_owner_pids": unknown[:MAX_LISTED],
        "simulated": any(s.simulated for s in found),
        "flagged": bool(unknown) and not foreign,
    }
    if foreign:
        named = ", ".join(f"pid {pid} on GPU {i}" for i, pid in foreign[:MAX_LISTED])
        return failed(code, f"a foreign compute process shared the arm's GPUs: {named}", **evidence)
    if unknown:
        return passed(
            code, f"flagged: compute processes of unknown owner on the arm's GPUs: pids {unknown}",
            **evidence,
        )  # fmt: skip
    return passed(code, "only the lane's own processes ran on the arm's GPUs", **evidence)


# --- gpu_errors -------------------------------------------------------------------------

COUNTERS = ("xid_errors", "ecc_uncorrected", "ecc_corrected")


def counter_rises(samples: Sequence[GpuSample], window: CellWindow) -> dict[str, dict[int, int]]:
    """Per counter and GPU, its rise from the last reading at or before the window's start
    (else the first) to the first at or after its end (else the last); unread: absent."""
    ok = sorted((s for s in samples if s.status is not ReadStatus.UNAVAILABLE), key=_at)
    rises: dict[str, dict[int, int]] = {name: {} for name in COUNTERS}
    for index, readings in _timed(ok).items():
        for name in COUNTERS:
            values = [(at, v) for at, r in readings if (v := getattr(r, name)) is not None]
            if values:
                rises[name][index] = _edge(values, window, after=True) - _edge(
                    values, window, after=False
                )
    return rises


def _timed(samples: Sequence[GpuSample]) -> dict[int, list[tuple[int, GpuReading]]]:
    by_device: dict[int, list[tuple[int, GpuReading]]] = {}
    for sample in samples:
        for reading in sample.devices:
            by_device.setdefault(reading.index, []).append((sample.actual_ns, reading))
    return by_device


def _edge(values: list[tuple[int, int]], window: CellWindow, *, after: bool) -> int:
    if after:
        return next((v for at, v in values if at >= window.end_ns), values[-1][1])
    before = [v for at, v in values if at <= window.start_ns]
    return before[-1] if before else values[0][1]


def gpu_errors(art: CellArtifacts, _: Cell, __: Thresholds) -> RuleResult:
    code = Reason.GPU_ERRORS
    if art.gpu is None:
        return not_applicable(code, NO_GPU)
    window = art.record.window
    if window is None:
        return not_evaluated(code, "cell.json has no window: no scored request was sent")
    rises = counter_rises(art.gpu, window)
    if not any(rises[name] for name in ("xid_errors", "ecc_uncorrected")):
        return not_evaluated(code, "NVML gave neither Xid nor uncorrected ECC counts")
    rose = {name: {i: n for i, n in by.items() if n > 0} for name, by in rises.items()}
    evidence: Evidence = {
        "xid_errors": sum(rose["xid_errors"].values()),
        "ecc_uncorrected": sum(rose["ecc_uncorrected"].values()),
        "ecc_corrected": sum(rose["ecc_corrected"].values()),
        "on_devices": sorted({i for by in rose.values() for i in by}),
        "simulated": any(s.simulated for s in art.gpu),
        "flagged": bool(rose["ecc_corrected"]),
    }
    detail = (
        f"over the window the arm's GPUs counted {evidence['xid_errors']} Xid error(s), "
        f"{evidence['ecc_uncorrected']} uncorrected and {evidence['ecc_corrected']} corrected "
        f"ECC error(s) (on GPUs {evidence['on_devices']})"
    )
    if rose["xid_errors"] or rose["ecc_uncorrected"]:
        return failed(code, detail, **evidence)
    return passed(code, f"flagged: {detail}" if evidence["flagged"] else detail, **evidence)
