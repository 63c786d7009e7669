"""JSON Schemas shipped under ``evidence/schemas/``: comparison.json's
(``comparison.schema.json``), the matrix TOML's (``matrix.schema.json``, for editors:
``matrix.toml.schema``) and, through ``flows.cli.output_schemas``, the ``--json`` output of
``status``, ``audit``, ``validate`` and ``tickets``.

Regenerate after changing a model (a test fails until the shipped files match; the matrix's
field reference, docs/reference/matrix-fields.md, is written with it):

    python -m evidence.bundle.schema_export
    python -m flows.cli.output_schemas
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from faceoff.files import write_text_atomic
from faceoff.formats.bundle.comparison import Comparison
from matrix.toml.reference import REFERENCE_PATH, field_reference
from matrix.toml.schema import SCHEMA_FILE, matrix_schema

SCHEMAS_DIR = Path(__file__).parents[1] / "schemas"  # evidence/schemas/, the package data
SCHEMA_PATH = SCHEMAS_DIR / "comparison.schema.json"
MATRIX_SCHEMA_PATH = SCHEMAS_DIR / SCHEMA_FILE


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def model_schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model_schema(model), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_text() -> str:
    return model_schema_text(Comparison)


def matrix_schema_text() -> str:
    return json.dumps(matrix_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    write_text_atomic(SCHEMA_PATH, schema_text(), replace=True)
    write_text_atomic(MATRIX_SCHEMA_PATH, matrix_schema_text(), replace=True)
    write_text_atomic(REFERENCE_PATH, field_reference(), replace=True)
