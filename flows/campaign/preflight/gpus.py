"""GPUs: every ``gpu_ids`` entry is a device NVML sees, and nothing the take-over leaves
running holds memory on it (the arms run one after another on the same GPUs, so only a
foreign process can share them). Read through the collectors' NVML interface. A simulator
arm's GPU ids name the virtual GPUs its lane models (``simulator/gpu.py``), not hardware."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import psutil

from collectors.gpu.nvml import Nvml
from faceoff.format import gib
from faceoff.formats.preflight import CheckResult
from flows.campaign.preflight.catalog import arm_subject, fail, ok
from matrix.arm import Arm


@dataclass(frozen=True)
class GpuHolder:
    pid: int
    used_bytes: int | None
    command: str  # its name and arguments, or why they could not be read


@dataclass(frozen=True)
class DeviceSeen:
    index: int
    name: str | None  # None when NVML has no such device
    error: str | None  # why it could not be read
    processes: tuple[GpuHolder, ...] = ()


def gpu_checks(arms: list[Arm], nvml: Nvml, exempt: Collection[int]) -> list[CheckResult]:
    """Look at every GPU an arm names; ``exempt``: pids of lanes the take-over stops. A
    simulator arm's GPU ids are its lane's virtual GPUs: NVML is not asked about them."""
    virtual = [_virtual(a) for a in arms if a.gpu_ids and a.simulator is not None]
    arms = [a for a in arms if a.gpu_ids and a.simulator is None]
    if not arms:
        return virtual or [ok("gpus", "host", "no arm names GPU ids")]
    try:
        nvml.init()
    except Exception as exc:  # NVMLError's many kinds all mean: no driver, no GPU here
        return [*virtual, *(_no_gpu(arm, str(exc)) for arm in arms)]
    try:
        seen = {i: see_device(nvml, i) for i in sorted({g for a in arms for g in a.gpu_ids})}
    finally:
        nvml.shutdown()
    return [*virtual, *(judge_gpus(arm, seen, exempt) for arm in arms)]


def _virtual(arm: Arm) -> CheckResult:
    return ok(
        "gpus",
        arm_subject(arm.name),
        f"gpu_ids {arm.gpu_ids} are the simulator lane's virtual GPUs (simulated; the lane "
        "models them, NVML is not asked)",
    )


def see_device(nvml: Nvml, index: int) -> DeviceSeen:
    try:
        device = nvml.device(index)
        name = device.name()
        found = device.processes()
    except Exception as exc:
        return DeviceSeen(index, None, str(exc) or type(exc).__name__)
    return DeviceSeen(index, name, None, tuple(GpuHolder(p, u, _command(p)) for p, u in found))


def judge_gpus(arm: Arm, seen: Mapping[int, DeviceSeen], exempt: Collection[int]) -> CheckResult:
    """Pure: the arm's GPUs as NVML saw them."""
    subject = arm_subject(arm.name)
    missing = [seen[i] for i in arm.gpu_ids if seen[i].name is None]
    if missing:
        said = "; ".join(f"GPU {d.index}: {d.error}" for d in missing)
        return fail(
            "gpus",
            subject,
            f"NVML has no GPU for gpu_ids {arm.gpu_ids} ({said})",
            "give the indices `nvidia-smi -L` lists on this host",
        )
    foreign = [(i, p) for i in arm.gpu_ids for p in seen[i].processes if p.pid not in exempt]
    if foreign:
        said = "; ".join(f"GPU {i}: pid {p.pid} ({p.command}) holds {_used(p)}" for i, p in foreign)
        return fail(
            "gpus",
            subject,
            f"a process the take-over will not stop holds GPU memory: {said}; the arms run "
            "one after another on these GPUs, and a lane would start short of memory",
            "stop those processes before the night (or give the arm other GPUs)",
        )
    names = ", ".join(f"{i}: {seen[i].name}" for i in arm.gpu_ids)
    return ok("gpus", subject, f"GPUs {names}; no foreign process holds memory on them")


def _no_gpu(arm: Arm, why: str) -> CheckResult:
    return fail(
        "gpus",
        arm_subject(arm.name),
        f"no NVIDIA GPU: NVML cannot start on this host ({why}), and the arm names gpu_ids "
        f"{arm.gpu_ids}",
        "run the campaign on its GPU host (or drop gpu_ids and declare gpu_memory not "
        "applicable for lanes without GPUs)",
    )


def _command(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline()) or psutil.Process(pid).name()
    except psutil.Error as exc:
        return f"not visible to this user: {type(exc).__name__}"


def _used(process: GpuHolder) -> str:
    return "memory" if process.used_bytes is None else gib(process.used_bytes)
