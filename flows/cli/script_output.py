"""``--json`` output of ``faceoff validate`` and ``faceoff tickets``, for scripts.

(``status --json`` prints ``flows.cli.status_report.StatusReport``, ``audit --json``
``evidence.audit.checklist.AuditOutput``.) Each carries its own ``schema_version``;
docs/flows.md, "Output for scripts", shows the shapes.

Format history of ``PlanOutput.schema_version`` and ``TicketsOutput.schema_version``:
  1 — first release.
  2 — ``PlanOutput`` only: ``cell_ids`` (the expanded cells), ``stop_policy`` and its
      sentence, ``order`` (the arms run one after another), each arm's ``gpu_ids``, and
      ``warnings``: what the matrix alone shows will cost the night (the preflight's
      static checks and the rule's reach, docs/flows.md "Before the night").
      ``power``: the rule's power table with ``validate --power`` (null without).
  3 — ``PlanOutput`` only: the power table says what each row's variance rests on
      (``requests`` per arm over the nights) and whether the between-night variance
      was included (``between``); single-pass rows planned as alternating passes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from evidence.comparison.power_table import PowerTable
from faceoff.artifact import Artifact, Spec
from faceoff.formats.frozen_matrix import FrozenMatrix
from faceoff.formats.preflight import CheckResult
from faceoff.formats.ticket import Ticket
from flows.campaign.preflight.static import static_checks, window_length
from lanes.deadlines import worst_case
from matrix.campaign_plan import plan
from matrix.model import Matrix
from tickets.store import ticket_file


class ArmPlanOutput(Spec):
    name: str
    role: str
    lane: str
    image: str | None = Field(description="The pinned image, repo@sha256:<64 hex>.")
    gpu_ids: list[int] = Field(description="GPU indices its lane uses.")
    url: str = Field(description="Where the arm's API listens.")
    served_model: str
    cells: int
    scored_requests: int
    warmup_requests: int


class WorstCaseOutput(Spec):
    startup_s: float
    warmups_s: float
    cells_s: float
    restoration_s: float
    total_s: float


class PlanOutput(Artifact):
    schema_version: Literal[3] = Field(default=3, description="validate --json format version.")
    campaign: str
    matrix_id: str
    cells: int
    cell_ids: list[str] = Field(description="The expanded cells, in the order they run.")
    stop_policy: str = Field(description="continue, block_workload or stop_campaign.")
    stop_policy_sentence: str = Field(description="What the stop policy does, in words.")
    order: str = Field(description="How the arms run: one after another, incumbent first.")
    cell_runs: int
    matched_pairs: int
    arms: list[ArmPlanOutput]
    worst_case: WorstCaseOutput = Field(description="Seconds, by the matrix's own deadlines.")
    warnings: list[CheckResult] = Field(
        description="What the matrix alone shows may cost the night (WARN; a FAIL is an error)."
    )
    power: PowerTable | None = Field(
        default=None,
        description="With --power: what the plan can decide per rule criterion and cell.",
    )


class TicketOutput(Spec):
    path: str = Field(description="<campaign>/tickets/<file>, relative to the workdir.")
    ticket: Ticket


class TicketsOutput(Artifact):
    schema_version: Literal[1] = Field(default=1, description="tickets --json format version.")
    tickets: list[TicketOutput]


def plan_output(frozen: FrozenMatrix, *, power: PowerTable | None = None) -> PlanOutput:
    matrix = frozen.matrix
    the_plan = plan(matrix)
    worst = worst_case(matrix)
    policy = matrix.campaign.stop_policy
    return PlanOutput(
        campaign=matrix.campaign.name,
        matrix_id=frozen.matrix_id,
        cells=len(matrix.cells),
        cell_ids=[c.id for c in matrix.cells],
        stop_policy=policy.value,
        stop_policy_sentence=policy.sentence,
        order=order_sentence(matrix),
        warnings=[*static_checks(frozen), *window_length(matrix)],
        cell_runs=len(the_plan.cell_runs),
        matched_pairs=len(the_plan.pairs),
        arms=[
            ArmPlanOutput(
                name=p.arm.name,
                role=p.arm.role.value,
                lane=p.arm.lane.value,
                image=p.arm.image,
                gpu_ids=p.arm.gpu_ids,
                url=p.arm.base_url,
                served_model=p.arm.served_model,
                cells=len(p.cells),
                scored_requests=p.scored_requests,
                warmup_requests=p.warmup_requests,
            )
            for p in the_plan.arms
        ],
        worst_case=WorstCaseOutput(
            startup_s=worst.startup_s,
            warmups_s=worst.warmups_s,
            cells_s=worst.cells_s,
            restoration_s=worst.restoration_s,
            total_s=worst.total_s,
        ),
        power=power,
    )


def order_sentence(matrix: Matrix) -> str:
    """How the arms take their turns on the host."""
    names = [a.name for a in [*matrix.reference_arms, *matrix.arm_order()]]
    shared = sorted({g for a in matrix.arms for g in a.gpu_ids})
    gpus = f" on GPU(s) {', '.join(map(str, shared))}" if shared else ""
    return (
        f"the arms run one after another{gpus}, never at once: {' then '.join(names)}, each "
        "lane stopped before the next starts; the incumbent is restored at the end"
    )


def tickets_output(found: Sequence[Ticket]) -> TicketsOutput:
    return TicketsOutput(
        tickets=[TicketOutput(path=f"{t.campaign}/{ticket_file(t.id)}", ticket=t) for t in found]
    )
