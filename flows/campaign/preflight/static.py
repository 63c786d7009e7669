"""What the matrix alone shows will cost the night: pure checks, no host needed.

``faceoff validate`` prints their results as warnings (it exits 0: the matrix is valid);
``faceoff preflight`` runs them with the host's checks, where a FAIL stops the run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import PurePosixPath

from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.preflight import CheckResult
from flows.campaign.preflight.catalog import arm_subject, fail, warn
from lanes.deadlines import HOUR_S, worst_case
from matrix.arm import Arm, LaneKind
from matrix.coherence.findings import findings
from matrix.engines import gpus_asked
from matrix.families import FamilySpec, FamilyStatus
from matrix.model import Matrix
from matrix.night_window import Window
from matrix.rule_warnings import rule_warnings

GPU_MEMORY = "gpu_memory"
# Docker's sizes (docker-py parse_bytes): a number and one of b, k, m, g (binary), with an
# optional trailing b; a bare number is bytes.
DOCKER_SIZE = re.compile(r"^\s*(?P<number>\d+(\.\d+)?)\s*(?P<unit>[bkmg])?(?P<b>b)?\s*$", re.I)
EFFORTS = frozenset({"none", "minimal", "low", "medium", "high", "max"})


def static_checks(frozen: FrozenMatrix) -> list[CheckResult]:
    """Every finding of the matrix alone but its time (the preflight's time check judges
    the estimate too; ``faceoff validate`` adds ``window_length``), in the catalog's order."""
    matrix = frozen.matrix
    return [
        *gpu_ids(matrix, frozen.registry),
        *parallel(matrix),
        *lane_settings(matrix),
        *relative_mounts(matrix),
        *unmounted_models(matrix),
        *rule_reach(matrix),
        *field_findings(matrix),
    ]


def gpu_ids(matrix: Matrix, registry: tuple[FamilySpec, ...]) -> list[CheckResult]:
    """An arm without GPU ids has no GPU samples: where gpu_memory is required, every one
    of its cells would be blocked family_missing."""
    required = any(f.name == GPU_MEMORY and f.status is FamilyStatus.REQUIRED for f in registry)
    if not required:
        return []
    return [
        fail(
            "gpu_ids",
            arm_subject(arm.name),
            "the gpu_memory family is required but the arm has no gpu_ids, so no GPU is "
            f"sampled and every one of its {len(matrix.cells_for(arm))} cell(s) would be "
            "blocked family_missing",
            "give the arm gpu_ids = [...] (the GPUs its engine uses), or declare "
            '[families.not_applicable] gpu_memory = "<why>" for lanes without GPUs',
        )
        for arm in matrix.arms
        if not arm.gpu_ids
    ]


def parallel(matrix: Matrix) -> list[CheckResult]:
    """The engine asks for tensor × pipeline × data parallel GPUs; the arm must give them."""
    found = []
    for arm in matrix.arms:
        asked = gpus_asked(arm.engine_argv)
        if arm.gpu_ids and asked > len(arm.gpu_ids):
            found.append(
                fail(
                    "parallel",
                    arm_subject(arm.name),
                    f"its engine flags ask for {asked} GPUs (tensor × pipeline × data parallel "
                    f"size) but gpu_ids = {arm.gpu_ids} gives {len(arm.gpu_ids)}; the engine "
                    "would refuse to start after the take-over",
                    f"give {asked} gpu_ids, or lower --tensor-parallel-size",
                )
            )
    return found


def lane_settings(matrix: Matrix) -> list[CheckResult]:
    return [r for arm in matrix.arms for r in _arm_settings(arm)] + _efforts(matrix)


def _arm_settings(arm: Arm) -> Iterator[CheckResult]:
    subject = arm_subject(arm.name)
    if arm.lane is not LaneKind.DOCKER:
        ignored = [f for f in ("image", "memory_limit", "shm_size") if getattr(arm, f)]
        ignored += ["mounts"] if arm.mounts else []
        if ignored:
            yield warn(
                "lane_settings",
                subject,
                f"a {arm.lane.value} lane runs on the host and ignores {', '.join(ignored)}",
                "remove them, or make the arm a docker lane if it should run in a container",
            )
        return
    for field in ("memory_limit", "shm_size"):
        size = getattr(arm, field)
        if size is not None:
            yield from _docker_size(subject, field, size)
    repo = (arm.image or "").split("@")[0]
    undeclared = arm.engine is None and arm.simulator is None and not arm.runs_vllm
    if undeclared and "vllm" in repo.lower():
        yield warn(
            "lane_settings",
            subject,
            f"its image {repo} looks like vLLM but engine is unset and the "
            "command runs no `vllm serve`, so faceoff adds no --host, --port or "
            "--served-model-name and the engine may listen elsewhere",
            'declare engine = "vllm" (or "other" when the image binds the arm\'s port itself)',
        )


def _docker_size(subject: str, field: str, size: str) -> Iterator[CheckResult]:
    match = DOCKER_SIZE.match(size)
    if match is None:
        yield fail(
            "lane_settings",
            subject,
            f"{field} = {size!r} is no size Docker reads (a number and b, k, m or g), so the "
            "container would be refused after the take-over",
            f'write it as e.g. "{_suggested(size)}"',
        )
    elif match["unit"] is None:
        yield fail(
            "lane_settings",
            subject,
            f"{field} = {size!r} has no unit: Docker reads it as {size.strip()} bytes",
            f'add the unit, e.g. "{size.strip()}g"',
        )
    elif match["b"]:
        unit = match["unit"].lower()
        yield warn(
            "lane_settings",
            subject,
            f"{field} = {size!r}: Docker reads {unit.upper()}B as binary units "
            f"({match['number']} × 1024^{'bkmg'.index(unit)} bytes), not decimal ones",
            f'write "{match["number"]}{unit}" to say what Docker does',
        )


def _suggested(size: str) -> str:
    digits = re.match(r"\s*(\d+)", size)
    return f"{digits[1]}g" if digits else "52g"


def _efforts(matrix: Matrix) -> list[CheckResult]:
    found = []
    for cell in matrix.cells:
        efforts = {
            cell.sampling.reasoning_effort,
            *cell.variants.get("reasoning_effort", {}).values(),
        }
        unknown = sorted(e for e in efforts if e is not None and e not in EFFORTS)
        if unknown:
            found.append(
                warn(
                    "lane_settings",
                    f"cell {cell.id}",
                    f"reasoning_effort {', '.join(map(repr, unknown))} is none of "
                    f"{', '.join(sorted(EFFORTS))}; a chat template leaves out a value it does "
                    "not know, so the cell may run at the template's default effort",
                    "use the effort the model's chat template names (e.g. 'high' or 'max')",
                )
            )
    return found


def relative_mounts(matrix: Matrix) -> list[CheckResult]:
    """Docker takes a source that is not an absolute path for a named volume: an empty one."""
    return [
        fail(
            "mounts",
            arm_subject(arm.name),
            f"mount source {m.source!r} is not an absolute path; Docker would mount an empty "
            f"named volume at {m.target}",
            "give the absolute host path of the model or data directory",
        )
        for arm in matrix.arms
        if arm.lane is LaneKind.DOCKER
        for m in arm.mounts
        if not PurePosixPath(m.source).is_absolute()
    ]


def unmounted_models(matrix: Matrix) -> list[CheckResult]:
    """A Docker vLLM arm serves a path inside its container: it must come from a mount."""
    found = []
    for arm in matrix.arms:
        model = arm.model
        if arm.lane is not LaneKind.DOCKER or model is None or not model.startswith("/"):
            continue
        if not any(_under(model, m.target) for m in arm.mounts):
            targets = ", ".join(m.target for m in arm.mounts) or "none"
            found.append(
                fail(
                    "model_path",
                    arm_subject(arm.name),
                    f"its model {model} is under no mount target (mounts: {targets}), so the "
                    "container cannot see it and the engine would not start",
                    f'mount the model directory, e.g. {{ source = "/models/...", target = '
                    f'"{PurePosixPath(model).parent}" }}',
                )
            )
    return found


def _under(path: str, target: str) -> bool:
    return PurePosixPath(path).is_relative_to(PurePosixPath(target))


def window_length(matrix: Matrix) -> list[CheckResult]:
    """The worst case by the deadlines against the window's whole length."""
    spec = matrix.campaign
    if spec.window is None:
        return []
    window = Window.parse(spec.window)
    length_s = window.length_s
    worst = worst_case(matrix).total_s
    if worst <= length_s:
        return []
    return [
        warn(
            "time",
            "campaign",
            f"the worst case by the deadlines is {worst / HOUR_S:.1f} h, longer than the "
            f"{length_s / HOUR_S:.1f} h window {spec.window}",
            "check the estimate with `faceoff preflight`; lower deadlines, requests or cells "
            "if even it does not fit",
        )
    ]


def field_findings(matrix: Matrix) -> list[CheckResult]:
    """Fields that contradict each other where that may be meant (``matrix.coherence.findings``)."""
    return [warn("fields", f.subject, f"{f.fields}: {f.finding}", f.fix) for f in findings(matrix)]


def rule_reach(matrix: Matrix) -> list[CheckResult]:
    """A rule that can end in no decision for what the matrix is, not how the lanes serve:
    probe cells it counts, fidelity limits on too few windows (``matrix.rule_warnings``)."""
    return [warn("rule", "the rule", w.finding, w.fix) for w in rule_warnings(matrix)]
