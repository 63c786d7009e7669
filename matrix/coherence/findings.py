"""What a matrix's fields say together that is likely a mistake but may be meant: an A/A
night nobody declared, arms that report different model ids, a startup deadline of
seconds, a memory share vLLM refuses, a cell deadline only outputs that end early fit, a
per-request deadline beyond its cell's, a rehearsal's relaxations copied onto a GPU night,
an engine flag the pinned vLLM does not know. Pure: each ``FieldWarning`` names the fields
concerned and the fix; ``faceoff validate`` prints them as warnings and the preflight
repeats them (its ``fields`` check), so the preflight report, and with it the card,
records them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from matrix.arm import Arm
from matrix.coherence.cross_table import FASTEST_DECODE_TPS, fastest_s, rounds, timed
from matrix.coherence.engine_flags import VLLM_VERSION, unknown_flags, vllm_flags
from matrix.engines import flag_value
from matrix.model import Matrix
from matrix.thresholds import Thresholds

MIN_STARTUP_S = 60.0  # a real engine loads weights and compiles for minutes, never seconds
MEMORY_FLAGS = ("--gpu-memory-utilization", "--device-memory-utilization")
GPU_FAMILIES = ("gpu_memory",)
STALL_FIELDS = (
    "stall_threshold_ms",
    "max_request_stall_ms",
    "max_stalled_requests",
    "max_client_cpu_wait",
    "max_schedule_lag_ms",
)
# What an engine runs: two arms equal in all of these run one recipe.
RECIPE_FIELDS = frozenset(
    {"lane", "image", "command", "engine", "engine_args", "env", "secrets", "mounts", "gpu_ids",
     "memory_limit", "shm_size", "simulator"}
)  # fmt: skip


@dataclass(frozen=True)
class FieldWarning:
    fields: str  # the fields concerned, as the matrix names them
    subject: str  # ``arm NAME``, ``cell ID``, ``campaign``
    finding: str  # what the fields say together, with the values
    fix: str


def findings(matrix: Matrix) -> list[FieldWarning]:
    """Every finding, arms first, then cells, then the campaign's."""
    return [
        *_twins(matrix),
        *_served_models(matrix),
        *(f for arm in matrix.arms for f in _arm_findings(arm)),
        *_cell_deadlines(matrix),
        *_request_deadlines(matrix),
        *_rehearsal_settings(matrix),
    ]


def _twins(matrix: Matrix) -> Iterator[FieldWarning]:
    if matrix.campaign.aa:
        return
    incumbent = matrix.incumbent
    recipe = incumbent.model_dump(include=set(RECIPE_FIELDS))
    varied = {arm for cell in matrix.cells for by_arm in cell.variants.values() for arm in by_arm}
    for arm in matrix.candidates:
        if arm.name in varied:
            continue  # what it is asked differs by design (an effort A/B): no twin
        if arm.model_dump(include=set(RECIPE_FIELDS)) == recipe:
            yield FieldWarning(
                f"arms ({incumbent.name}, {arm.name})",
                f"arm {arm.name}",
                f"runs the incumbent {incumbent.name!r}'s recipe exactly (image, command, "
                "engine_args, env, mounts, gpu_ids): an A/A comparison nobody declared",
                "give the candidate the recipe it should try, or declare campaign.aa = true "
                "for a calibration night",
            )


def _served_models(matrix: Matrix) -> Iterator[FieldWarning]:
    ids = {a.name: a.served_model for a in matrix.arm_order()}
    if len(set(ids.values())) > 1:
        said = ", ".join(f"{name}: {model!r}" for name, model in ids.items())
        yield FieldWarning(
            "arms.served_model",
            "the arms",
            f"the arms report different served_model ids ({said}); the router and its users "
            "ask for one id, so a promoted candidate would not answer them as it did here",
            "give every arm the id the router routes (vLLM: --served-model-name is set from it)",
        )


def _arm_findings(arm: Arm) -> Iterator[FieldWarning]:
    subject = f"arm {arm.name}"
    if arm.simulator is None and arm.startup_deadline_s < MIN_STARTUP_S:
        yield FieldWarning(
            "startup_deadline_s",
            subject,
            f"startup_deadline_s = {arm.startup_deadline_s:g}: an engine loads its weights and "
            "compiles for minutes; a deadline of seconds blocks every cell lane_not_ready",
            "give the startup minutes (the default is 900 s)",
        )
    memory = next((v for f in MEMORY_FLAGS if (v := flag_value(arm.engine_argv, f))), None)
    if arm.runs_vllm and memory is not None and _above_one(memory):
        yield FieldWarning(
            "engine_args --gpu-memory-utilization",
            subject,
            f"--gpu-memory-utilization {memory} is a share of each GPU's memory, above 1 "
            f"(vLLM {VLLM_VERSION} refuses it at start, after the take-over)",
            "give a share such as 0.9",
        )
    yield from _far_flags(arm, subject)


def _above_one(text: str) -> bool:
    try:
        return float(text) > 1
    except ValueError:
        return False


def _far_flags(arm: Arm, subject: str) -> Iterator[FieldWarning]:
    """A flag close to a known one is refused (``matrix.coherence.arm_fields``); one far
    from all may be another vLLM version's."""
    if not arm.runs_vllm:
        return
    far = [u.flag for u in unknown_flags(arm.engine_args, vllm_flags()) if u.near is None]
    if far:
        yield FieldWarning(
            "engine_args",
            subject,
            f"vLLM {VLLM_VERSION} knows no flag {', '.join(far)}; an image of another vLLM "
            "version may, else the engine exits at start",
            "check the flags against `vllm serve --help=all` of the arm's image",
        )


def _cell_deadlines(matrix: Matrix) -> Iterator[FieldWarning]:
    """A deadline only outputs that end early fit: each request writing its max_tokens would
    not, even at the fastest rates (forced lengths are refused: ``tables``)."""
    for cell in matrix.cells:
        if not timed(cell):
            continue
        for arm in matrix.arms:
            need_s = fastest_s(cell, cell.output_tokens, arm)
            if arm in matrix.arms_of(cell) and cell.deadline_s < need_s:
                yield FieldWarning(
                    "deadline_s, sampling.max_tokens",
                    f"cell {cell.id}",
                    f"deadline_s = {cell.deadline_s:g} is below the {need_s:,.0f} s its "
                    f"{rounds(cell)} round(s) of requests take on arm {arm.name!r} if each "
                    f"writes its max_tokens = {cell.output_tokens}, even at "
                    f"{FASTEST_DECODE_TPS:,.0f} tok/s: only outputs that end early fit",
                    "raise deadline_s, or lower requests or max_tokens",
                )
                break


def _request_deadlines(matrix: Matrix) -> Iterator[FieldWarning]:
    for cell in matrix.cells:
        limit = cell.request_deadline_s
        if limit is not None and limit > cell.deadline_s:
            yield FieldWarning(
                "request_deadline_s, deadline_s",
                f"cell {cell.id}",
                f"request_deadline_s = {limit:g} is above the cell's deadline_s = "
                f"{cell.deadline_s:g}: the cell's deadline ends a slow request first",
                "lower request_deadline_s below deadline_s, or raise deadline_s",
            )


def _rehearsal_settings(matrix: Matrix) -> Iterator[FieldWarning]:
    """A rehearsal on a host without GPUs declares the GPU families not applicable and
    relaxes the stall thresholds; copied onto a night with GPUs they hide what it measures."""
    gpus = [a.name for a in matrix.arms if a.gpu_ids and a.simulator is None]
    if not gpus:
        return
    arms = ", ".join(gpus)
    for family in GPU_FAMILIES:
        if family in matrix.families.not_applicable:
            yield FieldWarning(
                f"families.not_applicable.{family}, arms.gpu_ids",
                "campaign",
                f"{family} is declared not applicable, but arm(s) {arms} run on GPUs: the GPU "
                "memory of the night would go unmeasured",
                f"drop {family} from [families.not_applicable] on a GPU night",
            )
    defaults = Thresholds()
    relaxed = [
        f"{name} = {getattr(matrix.thresholds, name):g} (default {getattr(defaults, name):g})"
        for name in STALL_FIELDS
        if getattr(matrix.thresholds, name) > getattr(defaults, name)
    ]
    if relaxed:
        yield FieldWarning(
            f"thresholds ({', '.join(relaxed)}), arms.gpu_ids",
            "campaign",
            f"stall thresholds are relaxed ({'; '.join(relaxed)}) on a night whose arm(s) "
            f"{arms} run on GPUs: host stalls that distort the timings would not block a cell",
            "keep the defaults on the GPU host; relax them only for a rehearsal on a busy one",
        )
