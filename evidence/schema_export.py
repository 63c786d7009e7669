"""The JSON Schema of comparison.json, shipped as ``evidence/schemas/comparison.schema.json``.

Regenerate after changing the model (a test fails until the shipped file matches):

    python -m evidence.schema_export
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evidence.comparison import Comparison
from faceoff.files import write_text_atomic

SCHEMA_PATH = Path(__file__).with_name("schemas") / "comparison.schema.json"


def comparison_schema() -> dict[str, Any]:
    schema = Comparison.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def schema_text() -> str:
    return json.dumps(comparison_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    write_text_atomic(SCHEMA_PATH, schema_text(), replace=True)
