"""GPU posture: the device settings that change what a lane can do, read through NVML.
The same concept at another layer: ``evidence.views.card.posture``.

Persistence mode, the power limit (as set, the board's default, and the one enforced),
application clocks, the maximum SM clock, MIG and ECC mode (now and pending the next
reset), and the driver, CUDA driver and VBIOS versions. A campaign records the posture
of its GPUs when it opens and when it closes, and a lane when it starts, like the host
posture. Reading is ``collect_gpu_posture`` (through the collectors' ``Nvml`` interface,
real or virtual); the snapshot's model, its files and ``gpu_posture_changes`` are in
``faceoff.formats.gpu_posture``. Nothing raises: what cannot be read is recorded with
the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from collectors.gpu.nvml import Attempts, Nvml, NvmlDevice, why
from faceoff.formats.attempt.collector_samples import ReadStatus
from faceoff.formats.gpu_posture import GpuDevicePosture, GpuPosture


def collect_gpu_posture(
    nvml: Nvml, now: Callable[[], datetime], gpu_ids: Sequence[int] | None = None
) -> GpuPosture:
    """The posture of ``gpu_ids`` (default: every GPU NVML lists); never raises."""
    taken_at = now()
    try:
        nvml.init()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, an unreachable lane
        return _unavailable(nvml, taken_at, f"NVML unavailable: {why(exc)}")
    try:
        return _read(nvml, taken_at, gpu_ids)
    except Exception as exc:  # no device count, or no handle for an id
        return _unavailable(nvml, taken_at, f"NVML lists no such GPUs: {why(exc)}")
    finally:
        _shutdown(nvml)


def _read(nvml: Nvml, taken_at: datetime, gpu_ids: Sequence[int] | None) -> GpuPosture:
    ids = list(range(nvml.device_count())) if gpu_ids is None else list(gpu_ids)
    devices = [device_posture(index, nvml.device(index)) for index in ids]
    library = Attempts()
    posture = GpuPosture(
        taken_at=taken_at,
        simulated=nvml.simulated,
        status=ReadStatus.OK,
        error=None,
        driver_version=library.read("driver version", nvml.driver_version),
        cuda_driver_version=library.read("cuda driver version", nvml.cuda_driver_version),
        devices=devices,
    )
    unread = library.errors or any(d.errors for d in devices)
    if unread:
        error = "; ".join(library.errors) or None
        posture = posture.model_copy(update={"status": ReadStatus.PARTIAL, "error": error})
    return posture


def device_posture(index: int, device: NvmlDevice) -> GpuDevicePosture:
    attempts = Attempts()
    read = attempts.read
    mig, ecc = read("mig mode", device.mig_mode), read("ecc mode", device.ecc_mode)
    return GpuDevicePosture(
        index=index,
        uuid=read("uuid", device.uuid),
        name=read("name", device.name),
        vbios_version=read("vbios version", device.vbios_version),
        persistence_mode=read("persistence mode", device.persistence_mode),
        power_limit_w=read("power limit", device.power_limit_w),
        default_power_limit_w=read("default power limit", device.default_power_limit_w),
        enforced_power_limit_w=read("enforced power limit", device.enforced_power_limit_w),
        application_sm_clock_mhz=read("application sm clock", device.application_sm_clock_mhz),
        application_memory_clock_mhz=read(
            "application memory clock", device.application_memory_clock_mhz
        ),
        max_sm_clock_mhz=read("max sm clock", device.max_sm_clock_mhz),
        mig_mode=mig.current if mig else None,
        mig_mode_pending=mig.pending if mig else None,
        ecc_mode=ecc.current if ecc else None,
        ecc_mode_pending=ecc.pending if ecc else None,
        errors=attempts.errors,
    )


def _unavailable(nvml: Nvml, taken_at: datetime, error: str) -> GpuPosture:
    return GpuPosture(
        taken_at=taken_at,
        simulated=nvml.simulated,
        status=ReadStatus.UNAVAILABLE,
        error=error,
        driver_version=None,
        cuda_driver_version=None,
        devices=[],
    )


def _shutdown(nvml: Nvml) -> None:
    try:
        nvml.shutdown()
    except Exception:  # after the readings: nothing left to report
        return
