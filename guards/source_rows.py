"""The ``rows_mismatch`` rule: does a file-sourced plan send what its rows say?

A dataset or trace cell's plan keeps the row of every request (``workload.source_rows``).
From the rows alone the rule rebuilds each request's messages, token target and
max_tokens (a dataset row's messages and its count on the planning lane; a trace
record's blocks, cut where the plan says, its ``input_length`` and ``output_length``) and
compares them with the plan, so ``faceoff audit``, which judges every attempt again,
proves the bundle's requests came from the rows it holds. Blocked, not failed: a plan
that does not match its rows cannot be scored, which says nothing about the lane. Only a
plan with a source gets the rule (``guards.validity``).
"""

from __future__ import annotations

from guards.artifacts import CellArtifacts
from guards.outcomes import judged, not_evaluated
from guards.reasons import Reason
from guards.verdict import RuleResult
from matrix.model import Cell, Thresholds
from workload.request import PlannedRequest
from workload.source_rows import DatasetRow, Source, TraceRow, rebuilt_request, rows_by_request

CODE = Reason.ROWS_MISMATCH
MAX_LISTED = 10


def source_rows(art: CellArtifacts, cell: Cell, _: Thresholds) -> RuleResult:
    plan = art.plan
    if plan is None or plan.source is None:
        return not_evaluated(CODE, "requests.json holds no source rows")
    source, rows = plan.source, rows_by_request(plan.source)
    differ: list[str] = []
    for request in plan.requests:
        row = rows.get((request.phase, request.index))
        differ += [f"{request.phase.value} {request.index}: {what}"
                   for what in _differences(source, row, request, art, cell)]  # fmt: skip
    unused = len(rows) - len(plan.requests)
    shown = "; ".join(differ[:MAX_LISTED])
    return judged(
        CODE,
        not differ and unused == 0,
        f"{len(plan.requests) - len(differ)} of {len(plan.requests)} requests rebuilt from the "
        f"{source.kind} rows of {source.file} (sha256 {source.sha256[:12]})"
        + (f"; differing: {shown}" if differ else "")
        + (f"; {unused} row(s) belong to no request" if unused else ""),
        requests=len(plan.requests),
        differing=len(differ),
        file=source.file,
        sha256=source.sha256,
    )


def _differences(
    source: Source,
    row: DatasetRow | TraceRow | None,
    request: PlannedRequest,
    art: CellArtifacts,
    cell: Cell,
) -> list[str]:
    if row is None:
        return ["no row"]
    assert art.plan is not None
    plan, cap = art.plan, cell.sampling.max_tokens
    rebuilt = rebuilt_request(source, row, request, seed=plan.seed, namespace=plan.namespace,
                              prompt_id=cell.prompt_id, cap=cap)  # fmt: skip
    found = []
    if [m.model_dump() for m in request.messages] != rebuilt.messages:
        found.append("messages")
    if request.target_input_tokens != rebuilt.target_input_tokens:
        found.append(f"target {request.target_input_tokens} vs {rebuilt.target_input_tokens}")
    if rebuilt.max_tokens is not None and request.max_tokens != rebuilt.max_tokens:
        found.append(f"max_tokens {request.max_tokens} vs {rebuilt.max_tokens}")
    return found
