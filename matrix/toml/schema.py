"""The JSON Schema of a matrix TOML as a person writes it, for editors: completion, hover
help and checking as one types (a TOML language server such as taplo, or VS Code's Even
Better TOML, reads a ``#:schema PATH`` first line). Shipped as
``evidence/schemas/matrix.schema.json`` (``python -m evidence.bundle.schema_export``).

It is generated from the pydantic model (``Matrix``), and then describes the file rather
than the expanded model (``matrix.toml.reader``):

- ``[defaults]`` is a table of cell fields, each optional;
- a ``[[cells]]`` entry requires nothing (``[defaults]`` may give any field), may give a
  list for ``input_tokens`` and ``concurrency`` (a grid: one cell per combination), an
  ``id`` template (``"nat-{input_tokens}-c{concurrency}"``), ``replicates`` (or ``"auto"``
  with ``max_passes``) and a source file without its ``sha256``; the
  ``replicate`` field is faceoff's, written by expansion, never by a person;
- TOML has no null: an optional field is left out, never written empty.

Checks across fields (one incumbent, distinct ports, a cell that fits the context, a
rule that names known cells) are beyond a schema; ``faceoff validate`` makes them.
Draft 7 is declared: the draft TOML language servers implement.
"""

from __future__ import annotations

from typing import Any

from matrix.model import Matrix
from matrix.toml.reader import GRID_FIELDS, MAX_REPLICATES, TEMPLATE_FIELDS

DRAFT = "http://json-schema.org/draft-07/schema#"
SCHEMA_FILE = "matrix.schema.json"


def matrix_schema() -> dict[str, Any]:
    schema: dict[str, Any] = _without_null(Matrix.model_json_schema(mode="validation"))
    entry = schema["$defs"]["Cell"]
    fields = entry["properties"]
    del fields["replicate"]
    for name in GRID_FIELDS:
        fields[name] = _grid(fields[name])
    fields["id"] = {
        "type": "string",
        "description": "Cell id, unique in the matrix; default '<kind>-<input_tokens>-c"
        "<concurrency>'. In a grid, a template naming "
        f"{', '.join('{' + f + '}' for f in TEMPLATE_FIELDS)}, or a prefix.",
    }
    fields["replicates"] = {
        "anyOf": [
            {"type": "integer", "minimum": 1, "maximum": MAX_REPLICATES},
            {"const": "auto"},
        ],
        "default": 1,
        "description": "Run each cell of the entry K times in alternating passes, ids "
        "'<id>-r1' … '<id>-rK' sharing one prompt vector (docs/evidence.md 'Statistics'); "
        '"auto" with max_passes: a sequential cell, its later passes run only while its '
        "rule is undecided.",
    }
    fields["max_passes"] = {
        "type": "integer",
        "minimum": 2,
        "maximum": MAX_REPLICATES,
        "description": 'With replicates = "auto": the most passes the sequential cell may run.',
    }
    for source in ("Dataset", "Trace", "Corpus"):  # the loader takes a sha256 left out
        table = schema["$defs"][source]
        table["required"] = [f for f in table.get("required", []) if f != "sha256"]
    entry.pop("required", None)
    entry["title"] = "Cell entry"
    entry["description"] = (
        "A [[cells]] entry (or [defaults]): the cells it expands to, every field optional "
        "where [defaults] gives it."
    )
    schema["properties"]["defaults"] = {
        "$ref": "#/$defs/Cell",
        "description": "Cell fields applied to every [[cells]] entry that does not set them.",
    }
    schema["properties"]["cells"]["description"] = (
        "[[cells]] entries; lists in input_tokens and concurrency expand to every combination."
    )
    schema["title"] = "faceoff matrix"
    schema["$schema"] = DRAFT
    return schema


def _grid(field: dict[str, Any]) -> dict[str, Any]:
    """One value, or a non-empty list of them (a grid axis)."""
    one = {k: v for k, v in field.items() if k not in ("description", "title")}
    return {
        "anyOf": [one, {"type": "array", "items": one, "minItems": 1}],
        "description": f"{field.get('description', '')} A list expands to one cell per value.",
    }


def _without_null(node: Any) -> Any:
    """The schema with TOML's absences: no ``null`` branch, no ``null`` default."""
    if isinstance(node, list):
        return [_without_null(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {k: _without_null(v) for k, v in node.items()}
    if "anyOf" in node:
        kept = [b for b in node["anyOf"] if b != {"type": "null"}]
        if len(kept) == 1:
            del node["anyOf"]
            node = {**kept[0], **node}
        else:
            node["anyOf"] = kept
    if "default" in node and node["default"] is None:
        del node["default"]
    return node
