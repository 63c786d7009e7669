"""Checking a command's ``--json`` output against the JSON Schema shipped for it."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from flows.cli.output_schemas import schema_path


def shaped(command: str, stdout: str) -> Any:
    """The command's output, parsed, once it validates against its shipped schema."""
    schema = json.loads(schema_path(command).read_text(encoding="utf-8"))
    document = json.loads(stdout)
    jsonschema.Draft202012Validator(schema).validate(document)
    return document
