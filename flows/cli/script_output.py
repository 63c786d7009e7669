"""``--json`` output of ``faceoff validate`` and ``faceoff tickets``, for scripts.

(``status --json`` prints ``flows.cli.status_report.StatusReport``, ``audit --json``
``evidence.audit.checklist.AuditOutput``.) Each carries its own ``schema_version``;
docs/flows.md, "Output for scripts", shows the shapes.

Format history of ``PlanOutput.schema_version`` and ``TicketsOutput.schema_version``:
  1 — first release. Later in 1, ``PlanOutput`` gains ``warnings`` (what validation warns of
      without refusing: a rule that counts probe cells).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from lanes.deadlines import worst_case
from matrix.freeze import FrozenMatrix
from matrix.plan import plan
from tickets.model import Ticket
from tickets.store import ticket_file


class ArmPlanOutput(Spec):
    name: str
    role: str
    lane: str
    image: str | None
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
    schema_version: Literal[1] = Field(default=1, description="validate --json format version.")
    campaign: str
    matrix_id: str
    cells: int
    cell_runs: int
    matched_pairs: int
    arms: list[ArmPlanOutput]
    worst_case: WorstCaseOutput = Field(description="Seconds, by the matrix's own deadlines.")
    warnings: list[str] = Field(
        default_factory=list, description="What validation warns of without refusing."
    )


class TicketOutput(Spec):
    path: str = Field(description="<campaign>/tickets/<file>, relative to the workdir.")
    ticket: Ticket


class TicketsOutput(Artifact):
    schema_version: Literal[1] = Field(default=1, description="tickets --json format version.")
    tickets: list[TicketOutput]


def plan_output(frozen: FrozenMatrix, warnings: Sequence[str] = ()) -> PlanOutput:
    matrix = frozen.matrix
    the_plan = plan(matrix)
    worst = worst_case(matrix)
    return PlanOutput(
        campaign=matrix.campaign.name,
        matrix_id=frozen.matrix_id,
        cells=len(matrix.cells),
        cell_runs=len(the_plan.cell_runs),
        matched_pairs=len(the_plan.pairs),
        arms=[
            ArmPlanOutput(
                name=p.arm.name,
                role=p.arm.role.value,
                lane=p.arm.lane.value,
                image=p.arm.image,
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
        warnings=list(warnings),
    )


def tickets_output(found: Sequence[Ticket]) -> TicketsOutput:
    return TicketsOutput(
        tickets=[TicketOutput(path=f"{t.campaign}/{ticket_file(t.id)}", ticket=t) for t in found]
    )
