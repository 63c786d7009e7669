"""The matrix's JSON Schema (for editors) and its field reference are generated from the
models, shipped current, describe the TOML a person writes (grids, [defaults]) and accept
every example matrix as a TOML language server sees it."""

from __future__ import annotations

import datetime as dt
import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from evidence.bundle.schema_export import MATRIX_SCHEMA_PATH, matrix_schema_text
from matrix.model import Matrix
from matrix.toml.reader import load_matrix
from matrix.toml.reference import (
    REFERENCE_PATH,
    WRITTEN_EXAMPLES,
    _map_fields,
    examples_found,
    field_reference,
    tables,
)
from matrix.toml.schema import DRAFT, matrix_schema
from tests.foundation.cli import REPO
from tests.foundation.test_matrix import MINIMAL

EXAMPLES = sorted((REPO / "matrix" / "examples").glob("*.toml"))
REGENERATE = "run `python -m evidence.bundle.schema_export`"


def as_a_language_server_sees_it(text: str) -> Any:
    """The TOML's data as JSON (a TOML date-time becomes its RFC 3339 string)."""
    return json.loads(json.dumps(tomllib.loads(text), default=_iso))


def _iso(value: object) -> str:
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    raise TypeError(value)


def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(MATRIX_SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_the_shipped_schema_and_field_reference_are_current() -> None:
    assert MATRIX_SCHEMA_PATH.read_text(encoding="utf-8") == matrix_schema_text(), REGENERATE
    assert REFERENCE_PATH.read_text(encoding="utf-8") == field_reference(), REGENERATE
    assert matrix_schema()["$schema"] == DRAFT == "http://json-schema.org/draft-07/schema#"


def models(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """Every model a matrix is made of, by name."""
    found = {model.__name__: model}
    for field in model.model_fields.values():
        for inner in _models_in(field.annotation):
            if inner.__name__ not in found:
                found |= models(inner)
    return found


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in getattr(annotation, "__args__", ()) for m in _models_in(arg)]


def test_every_field_of_every_model_is_in_the_schema_and_the_reference() -> None:
    """A field added to a model and not regenerated fails the test above; this one says the
    generation misses none (`replicate` is written by expansion, never by a person)."""
    schema, reference = matrix_schema(), field_reference()
    for name, model in models(Matrix).items():
        if name == "Replicate":
            continue
        properties = (
            schema["properties"] if name == "Matrix" else schema["$defs"][name]["properties"]
        )
        expected = set(model.model_fields) - {"replicate"}
        assert expected <= set(properties), (name, expected - set(properties))
        for field in expected:
            assert f"- **`{field}`**" in reference, (name, field)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_validates_against_the_schema_as_written(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    errors = [e.message for e in validator().iter_errors(as_a_language_server_sees_it(text))]
    assert errors == []
    directive, blank = text.splitlines()[:2]
    assert directive == "#:schema ../../evidence/schemas/matrix.schema.json" and blank == ""
    assert (path.parent / directive.split()[1]).resolve() == MATRIX_SCHEMA_PATH.resolve()
    load_matrix(path)  # and faceoff agrees


GRID = MINIMAL.replace("input_tokens = 1024", "input_tokens = [1024, 2048]")
WITH_DEFAULTS = MINIMAL.replace(
    "[[cells]]\nkind", "[defaults]\nrequests = 2\nsampling = { max_tokens = 64 }\n\n[[cells]]\nkind"
).replace("requests = 2\n", "", 1)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        (GRID, None),  # a grid entry, as written
        (WITH_DEFAULTS, None),  # a field given by [defaults] alone
        (GRID + "replicates = 3\n", None),  # an entry run three times
        (MINIMAL.replace("concurrency = 1", "concurency = 1"), "'concurency' was unexpected"),
        (
            MINIMAL.replace("concurrency = 1", "concurrency = []"),
            "[] is not valid under any of the given schemas",
        ),
        (MINIMAL.replace("port = 9001", 'port = "9001"'), "is not of type 'integer'"),
        (MINIMAL.replace('kind = "natural"', 'kind = "chatty"'), "'chatty' is not one of"),
        (
            MINIMAL.replace("requests = 2", "requests = 2\nreplicate = { of = 'x' }"),
            "'replicate' was unexpected",
        ),
        (MINIMAL + '[rule]\n[[rule.criteria]]\nmetric = "ttft_p95"\n', "'ttft_p95' is not one of"),
    ],
)
def test_the_schema_describes_the_toml_a_person_writes(text: str, complaint: str | None) -> None:
    errors = [e.message for e in validator().iter_errors(as_a_language_server_sees_it(text))]
    if complaint is None:
        assert errors == []
    else:
        assert any(complaint in e for e in errors), errors


def test_every_written_example_is_needed_and_valid() -> None:
    schema = matrix_schema()
    found = examples_found(_map_fields(schema))
    fields = {(*t.path, name): field for t in tables(schema) for name, field in t.fields()}
    for path, example in WRITTEN_EXAMPLES.items():
        assert path in fields, f"{path} is no field"
        assert path not in found, f"{path}: an example matrix gives it already"
        field = {**fields[path], "$defs": schema["$defs"]}
        jsonschema.Draft7Validator(field).validate(json.loads(json.dumps(example, default=_iso)))
