"""The GPU sampler: NVML readings of each of the arm's GPUs, one GpuSample per tick.
The same concept at another layer: ``collectors.sampler``.

NVML missing or failing never ends the cell: the sample says "unavailable" with
the reason, and the next tick tries to open NVML again. One failing reading of
a device (power on a board that does not report it) marks that reading, not the
device. Each compute process is marked the lane's or foreign when the sampler
knows the lane (``owner``); a sample read from a simulator's virtual GPU says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from collectors.gpu.nvml import Attempts, Nvml, NvmlDevice, why
from collectors.gpu.owner import ProcessOwner
from collectors.sampler import Clocks, Tick, tick_fields
from faceoff.files import JsonlAppender
from faceoff.formats.attempt.collector_samples import GpuProcess, GpuReading, GpuSample, ReadStatus
from faceoff.formats.attempt.stalls import GPU_FILE


class GpuSampler:
    name = "gpu"

    def __init__(
        self,
        nvml: Nvml,
        gpu_ids: Sequence[int],
        folder: Path,
        *,
        clocks: Clocks,
        owner: ProcessOwner | None = None,
    ) -> None:
        self.nvml = nvml
        self.gpu_ids = tuple(gpu_ids)
        self.folder = Path(folder)
        self.clocks = clocks
        self.owner = owner
        self._devices: dict[int, NvmlDevice] | None = None
        self._open_error: str | None = None
        self._appender: JsonlAppender | None = None

    @property
    def path(self) -> Path:
        return self.folder / GPU_FILE

    def open(self) -> None:
        self._appender = JsonlAppender(self.path)
        self._ensure_devices()

    def take(self, tick: Tick) -> None:
        wall = self.clocks.wall()
        devices = self._ensure_devices()
        if devices is None:
            status, error, readings = ReadStatus.UNAVAILABLE, self._open_error, []
        else:
            readings = [read_device(index, device, self.owner) for index, device in devices.items()]
            status = _status(readings)
            error = (
                "no GPU of the arm reported its memory"
                if status is ReadStatus.UNAVAILABLE
                else None
            )
        latency = self.clocks.mono_ns() - tick.actual_ns
        sample = GpuSample(
            **tick_fields(tick, wall, latency),
            status=status,
            error=error,
            devices=readings,
            simulated=self.nvml.simulated,
        )
        assert self._appender is not None
        self._appender.append(sample)

    def close(self) -> None:
        if self._devices is not None:
            _quietly(self.nvml.shutdown)
            self._devices = None
        if self._appender is not None:
            self._appender.close()

    def _ensure_devices(self) -> dict[int, NvmlDevice] | None:
        """Open NVML and a handle per GPU id, once it works; remember why it did not."""
        if self._devices is not None:
            return self._devices
        try:
            self.nvml.init()
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            self._open_error = f"NVML unavailable: {why(exc)}"
            return None
        try:
            self._devices = {i: self.nvml.device(i) for i in self.gpu_ids}
        except Exception as exc:
            _quietly(self.nvml.shutdown)
            self._open_error = f"NVML has no handle for GPU ids {list(self.gpu_ids)}: {why(exc)}"
            return None
        self._open_error = None
        return self._devices


def read_device(index: int, device: NvmlDevice, owner: ProcessOwner | None = None) -> GpuReading:
    attempts = Attempts()
    attempt = attempts.read
    memory = attempt("memory", device.memory)
    util = attempt("utilization", device.utilization)
    processes = attempt("processes", device.processes)
    ecc = attempt("ecc errors", device.ecc_errors)
    xid = attempt("xid errors", device.xid_errors)
    return GpuReading(
        index=index,
        uuid=attempt("uuid", device.uuid),
        name=attempt("name", device.name),
        used_bytes=memory.used_bytes if memory else None,
        free_bytes=memory.free_bytes if memory else None,
        total_bytes=memory.total_bytes if memory else None,
        util_percent=util.gpu_percent if util else None,
        memory_util_percent=util.memory_percent if util else None,
        power_w=attempt("power", device.power_w),
        temperature_c=attempt("temperature", device.temperature_c),
        processes=None if processes is None else _processes(processes, owner),
        energy_mj=attempt("energy", device.energy_mj),
        clock_event_reasons=attempt("clock event reasons", device.clock_event_reasons),
        sm_clock_mhz=attempt("sm clock", device.sm_clock_mhz),
        max_sm_clock_mhz=attempt("max sm clock", device.max_sm_clock_mhz),
        ecc_corrected=ecc.corrected if ecc else None,
        ecc_uncorrected=ecc.uncorrected if ecc else None,
        xid_errors=xid.count if xid else None,
        last_xid=xid.last if xid else None,
        errors=attempts.errors,
    )


def _processes(found: list[tuple[int, int | None]], owner: ProcessOwner | None) -> list[GpuProcess]:
    return [
        GpuProcess(pid=pid, used_bytes=used, lane=None if owner is None else owner.owns(pid))
        for pid, used in found
    ]


def _status(readings: list[GpuReading]) -> ReadStatus:
    if not readings or not any(r.has_memory for r in readings):
        return ReadStatus.UNAVAILABLE
    if all(r.has_memory for r in readings):
        return ReadStatus.OK
    return ReadStatus.PARTIAL


def _quietly(call: Callable[[], object]) -> None:
    try:
        call()
    except Exception:  # shutting NVML down after a failure: nothing left to report
        return
