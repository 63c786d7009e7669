"""JSON Schemas of the ``--json`` output of ``status``, ``audit``, ``validate``, ``tickets`` and
``preflight``, and of the error any of them prints under ``--json`` (``error``), shipped beside
comparison.json's under ``evidence/schemas/<command>.output.schema.json``.

Each output carries its own ``schema_version`` (the models' modules keep their format
history). Regenerate after changing one of the models (a test fails until the shipped files
match):

    python -m flows.cli.output_schemas
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from evidence.audit.checklist import AuditOutput
from evidence.bundle.schema_export import SCHEMAS_DIR, model_schema_text
from faceoff.files import write_text_atomic
from faceoff.formats.preflight import PreflightReport
from flows.cli.error_output import ErrorOutput
from flows.cli.script_output import PlanOutput, TicketsOutput
from flows.cli.status_report import StatusReport

OUTPUTS: dict[str, type[BaseModel]] = {
    "status": StatusReport,
    "audit": AuditOutput,
    "validate": PlanOutput,
    "tickets": TicketsOutput,
    "preflight": PreflightReport,
    "error": ErrorOutput,
}


def schema_path(command: str) -> Path:
    return SCHEMAS_DIR / f"{command}.output.schema.json"


if __name__ == "__main__":
    for command, model in OUTPUTS.items():
        write_text_atomic(schema_path(command), model_schema_text(model), replace=True)
