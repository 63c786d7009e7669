"""JSON Schemas shipped under ``evidence/schemas/``: comparison.json's
(``comparison.schema.json``) and, through ``flows.cli.output_schemas``, the ``--json`` output of
``status``, ``audit``, ``validate`` and ``tickets``.

Regenerate after changing a model (a test fails until the shipped files match):

    python -m evidence.bundle.schema_export
    python -m flows.cli.output_schemas
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evidence.comparison.model import Comparison
from faceoff.files import write_text_atomic

SCHEMAS_DIR = Path(__file__).parents[1] / "schemas"  # evidence/schemas/, the package data
SCHEMA_PATH = SCHEMAS_DIR / "comparison.schema.json"


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def model_schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model_schema(model), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def schema_text() -> str:
    return model_schema_text(Comparison)


if __name__ == "__main__":
    write_text_atomic(SCHEMA_PATH, schema_text(), replace=True)
