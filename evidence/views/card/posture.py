"""The card's host and GPU posture: the settings at the campaign's start and end (and each
lane run's GPUs), changes flagged.
The same concept at another layer: ``collectors.gpu.posture``.

Renders ``comparison.json``'s ``posture``; computes nothing.
"""

from __future__ import annotations

from evidence.views.card.markdown import Sources, table
from faceoff.formats.bundle.comparison import Comparison
from faceoff.formats.gpu_posture import COMPARED as GPU_COMPARED
from faceoff.formats.gpu_posture import (
    GPU_END_FILE,
    GPU_START_FILE,
    LANE_GPU_FILE,
    GpuDevicePosture,
    GpuPosture,
)
from faceoff.formats.host_posture import (
    COMPARED,
    END_FILE,
    POSTURE_DIR,
    START_FILE,
    HostPosture,
    LaneGpuPosture,
)

MISSING = "—"


def posture(c: Comparison, sources: Sources) -> str:
    view = c.posture
    if view is None:
        return "Not recorded: the campaign ran without the flow that reads the host's posture."
    ref = sources.ref("posture", [f"{POSTURE_DIR}/{START_FILE}", f"{POSTURE_DIR}/{END_FILE}"])
    rows = [
        [name, _value(view.start, name), _value(view.end, name),
         "**changed**" if _value(view.start, name) != _value(view.end, name) else ""]
        for name in COMPARED
    ]  # fmt: skip
    flagged = (
        "**The host's posture changed during the campaign**: " + "; ".join(view.changes) + "."
        if view.changes
        else "No setting changed between the start and the end."
    )
    return f"{flagged} {ref}\n\n" + table(["setting", "start", "end", ""], rows)


def _value(snapshot: HostPosture | None, name: str) -> str:
    if snapshot is None:
        return "not recorded"
    value = getattr(snapshot, name)
    if isinstance(value, list):
        return ", ".join(value) or MISSING
    return MISSING if value is None else str(value)


GPU_NOTE = (
    "NVML's view of the GPUs: the hardware GPUs of the arms when the campaign opened and "
    "closed, and each lane run's GPUs once it was ready (a simulator lane's virtual GPUs are "
    "**simulated**), each compared with the arm's lane run before it."
)


def gpu_posture(c: Comparison, sources: Sources) -> str:
    view = c.posture
    if view is None or (view.gpu_start is None and view.gpu_end is None and not view.lanes):
        return "Not recorded: no arm has GPU ids."
    parts = [GPU_NOTE]
    if view.gpu_start is not None or view.gpu_end is not None:
        files = [f"{POSTURE_DIR}/{GPU_START_FILE}", f"{POSTURE_DIR}/{GPU_END_FILE}"]
        ref = sources.ref("posture.gpu_start, posture.gpu_end", files)
        flagged = (
            "**The GPUs' posture changed during the campaign**: " + "; ".join(view.gpu_changes)
            if view.gpu_changes
            else "No GPU setting changed between the start and the end"
        )
        parts += [f"{flagged}. {ref}", _campaign_gpus(view.gpu_start, view.gpu_end)]
    if view.lanes:
        ref = sources.ref("posture.lanes", [f"{x.run}/{LANE_GPU_FILE}" for x in view.lanes])
        parts.append(f"Each lane run's GPUs {ref}:\n\n" + _lanes(view.lanes))
    return "\n\n".join(parts)


def _campaign_gpus(start: GpuPosture | None, end: GpuPosture | None) -> str:
    rows = [["driver / CUDA", _driver(start), _driver(end), _flag(_driver(start), _driver(end))]]
    indices = sorted({d.index for p in (start, end) if p for d in p.devices})
    for index in indices:
        before, after = _device(start, index), _device(end, index)
        for name in GPU_COMPARED:
            was, now = _setting(before, name), _setting(after, name)
            rows.append([f"GPU {index} {name}", was, now, _flag(was, now)])
    return table(["setting", "start", "end", ""], rows)


def _lanes(lanes: list[LaneGpuPosture]) -> str:
    rows, seen = [], set()
    for x in lanes:
        since = "**changed**: " + "; ".join(x.changes) if x.changes else "unchanged"
        rows.append(
            [
                x.run,
                _status(x.posture),
                _driver(x.posture),
                _devices(x.posture.devices),
                since if x.arm in seen else "its first run",
            ]
        )
        seen.add(x.arm)
    return table(["lane run", "read", "driver / CUDA", "GPUs", "since the arm's last run"], rows)


def _devices(devices: list[GpuDevicePosture]) -> str:
    """Devices alike but for their index in one phrase: 'GPUs 0, 1 NVIDIA …: limit …'."""
    alike: dict[str, list[int]] = {}
    for d in devices:
        alike.setdefault(_device_words(d), []).append(d.index)
    return (
        "; ".join(
            f"GPU{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} {words}"
            for words, ids in alike.items()
        )
        or MISSING
    )


def _status(p: GpuPosture) -> str:
    said = p.status.value + (f" ({p.error})" if p.error else "")
    return said + (", **simulated**" if p.simulated else "")


def _driver(p: GpuPosture | None) -> str:
    if p is None:
        return "not recorded"
    return f"{p.driver_version or MISSING} / {p.cuda_driver_version or MISSING}"


def _device(p: GpuPosture | None, index: int) -> GpuDevicePosture | None:
    return next((d for d in p.devices if d.index == index), None) if p else None


def _setting(d: GpuDevicePosture | None, name: str) -> str:
    if d is None:
        return "not recorded"
    value = getattr(d, name)
    return MISSING if value is None else str(value)


def _flag(was: str, now: str) -> str:
    return "**changed**" if was != now else ""


def _device_words(d: GpuDevicePosture) -> str:
    """'NVIDIA … (simulated): limit 600 W, persistence on, ECC on, MIG off, max SM …'."""
    limit = MISSING if d.enforced_power_limit_w is None else f"{d.enforced_power_limit_w:g} W"
    return (
        f"{d.name or MISSING}: limit {limit}, persistence "
        f"{_on(d.persistence_mode)}, ECC {_on(d.ecc_mode)}, MIG {_on(d.mig_mode)}, max SM "
        f"{MISSING if d.max_sm_clock_mhz is None else f'{d.max_sm_clock_mhz} MHz'}"
    )


def _on(value: bool | None) -> str:
    return MISSING if value is None else ("on" if value else "off")
