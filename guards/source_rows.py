"""The ``rows_mismatch`` rule: does a file-sourced plan send what its rows say?

A dataset or trace cell's plan keeps the row of every request (``workload.traffic.rows``).
From the rows alone the rule rebuilds each request's messages, token target and
max_tokens (a dataset row's messages and its count on the planning lane; a trace
record's blocks, cut where the plan says, its ``input_length`` and ``output_length``) and
compares them with the plan, so ``faceoff audit``, which judges every attempt again,
proves the bundle's requests came from the rows it holds. Blocked, not failed: a plan
that does not match its rows cannot be scored, which says nothing about the lane. Only a
plan with a source gets the rule (``guards.validity``).
"""

from __future__ import annotations

from faceoff.formats.attempt.request_plan import DatasetRow, PlannedRequest, RequestPlan, TraceRow
from faceoff.formats.attempt.verdict import RuleResult
from faceoff.formats.reasons import Reason
from guards.artifacts import CellArtifacts
from guards.outcomes import judged, not_evaluated
from matrix.cell import Cell
from matrix.thresholds import Thresholds
from workload.traffic.rows import rebuilt_request, rows_by_request

CODE = Reason.ROWS_MISMATCH
MAX_LISTED = 10


def source_rows(art: CellArtifacts, cell: Cell, _: Thresholds) -> RuleResult:
    plan = art.plan
    if plan is None or plan.source is None:
        return not_evaluated(CODE, "requests.json holds no source rows")
    source, differ = plan.source, rebuild_differences(plan, cell)
    shown = "; ".join(differ[:MAX_LISTED])
    return judged(
        CODE,
        not differ,
        f"{len(plan.requests)} requests rebuilt from the {source.kind} rows of {source.file} "
        f"(sha256 {source.sha256[:12]})" + (f"; differing: {shown}" if differ else ""),
        requests=len(plan.requests),
        differing=len(differ),
        file=source.file,
        sha256=source.sha256,
    )


def rebuild_differences(plan: RequestPlan, cell: Cell) -> list[str]:
    """What differs between each planned request and what its row rebuilds, and rows that
    belong to no request; empty when the plan is its rows'."""
    assert plan.source is not None, "only a sourced plan has rows"
    rows = rows_by_request(plan.source)
    found = []
    for request in plan.requests:
        row = rows.pop((request.phase, request.index), None)
        found += [f"{request.phase.value} request {request.index}: {what}"
                  for what in _differences(plan, cell, row, request)]  # fmt: skip
    found += [f"{phase.value} row {index}: no request" for phase, index in sorted(rows)]
    return found


def _differences(
    plan: RequestPlan, cell: Cell, row: DatasetRow | TraceRow | None, request: PlannedRequest
) -> list[str]:
    if row is None or plan.source is None:
        return ["no row"]
    rebuilt = rebuilt_request(plan.source, row, request, seed=plan.seed, namespace=plan.namespace,
                              prompt_id=cell.prompt_id, cap=cell.sampling.max_tokens)  # fmt: skip
    found = []
    if [m.model_dump() for m in request.messages] != rebuilt.messages:
        found.append("messages")
    if request.target_input_tokens != rebuilt.target_input_tokens:
        found.append(f"target {request.target_input_tokens} vs {rebuilt.target_input_tokens}")
    if rebuilt.max_tokens is not None and request.max_tokens != rebuilt.max_tokens:
        found.append(f"max_tokens {request.max_tokens} vs {rebuilt.max_tokens}")
    return found
