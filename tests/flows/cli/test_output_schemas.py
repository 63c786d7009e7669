"""The JSON Schemas of `status`, `audit`, `validate`, `tickets` and `preflight --json` are
shipped current,
and real output validates against them (the commands' own tests validate theirs too:
tests/evidence/audit/test_reverify.py, tests/flows/cli/test_tickets.py,
tests/restore/test_restore_dead_incumbent.py)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from evidence.bundle.schema_export import model_schema_text
from flows.cli.output_schemas import OUTPUTS, schema_path
from tests.foundation.cli import REPO, faceoff
from tests.foundation.output_schemas import shaped

EXAMPLE = REPO / "matrix" / "examples" / "sim-faceoff.toml"


@pytest.mark.parametrize("command", sorted(OUTPUTS))
def test_the_shipped_output_schema_is_current(command: str) -> None:
    shipped = schema_path(command).read_text(encoding="utf-8")
    assert shipped == model_schema_text(OUTPUTS[command]), (
        f"{schema_path(command).name} is stale; run `python -m flows.cli.output_schemas`"
    )
    schema = json.loads(shipped)
    assert "schema_version" in schema["properties"]


def test_validate_status_and_tickets_output_match_their_schemas(tmp_path: Path) -> None:
    plan = shaped("validate", faceoff("validate", str(EXAMPLE), "--json").stdout)
    assert plan["schema_version"] == 3 and plan["campaign"] == "sim-faceoff"
    status = shaped("status", faceoff("status", "--workdir", str(tmp_path), "--json").stdout)
    assert (status["schema_version"], status["campaigns"]) == (2, [])
    tickets = shaped("tickets", faceoff("tickets", "--workdir", str(tmp_path), "--json").stdout)
    assert tickets == {"schema_version": 1, "tickets": []}


def test_an_output_of_another_shape_fails_its_schema() -> None:
    plan = json.loads(faceoff("validate", str(EXAMPLE), "--json").stdout)
    broken = {**plan, "cell_runs": "twelve"}
    schema = json.loads(schema_path("validate").read_text(encoding="utf-8"))
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(broken))
    assert errors and "twelve" in errors[0].message
    with pytest.raises(jsonschema.ValidationError):
        shaped("validate", json.dumps({k: v for k, v in plan.items() if k != "arms"}))
