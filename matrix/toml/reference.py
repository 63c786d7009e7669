"""docs/reference/matrix-fields.md, generated: every field of the matrix TOML with its type,
default, limits, what it means and an example, table by table, from the same schema
editors read (``matrix.toml.schema``). The meanings are the models' field descriptions; an
example is the first value a shipped example matrix (``matrix/examples/``) gives the
field, else one written here. A test fails when the page and the models differ:

    python -m evidence.bundle.schema_export
"""

from __future__ import annotations

import datetime as dt
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.toml.inline import toml_key, toml_value
from matrix.toml.schema import matrix_schema

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_PATH = ROOT / "docs" / "reference" / "matrix-fields.md"
EXAMPLES_DIR = ROOT / "matrix" / "examples"
Path_ = tuple[str, ...]

# Examples of the fields no shipped example matrix sets (a test keeps every field covered).
WRITTEN_EXAMPLES: dict[Path_, Any] = {
    ("campaign", "successor_of"): "glm53-r11",
    ("campaign", "client_receive"): "spin",
    ("campaign", "deadline"): dt.datetime.fromisoformat("2026-10-18T06:00:00+02:00"),
    ("campaign", "pilot"): "strict",
    ("campaign", "fidelity_reference"): "bf16-reference",
    ("fidelity", "corpus", "format"): "jsonl",
    ("fidelity", "stride"): 256,
    ("fidelity", "prompt_logprobs"): 20,
    ("fidelity", "concurrency"): 2,
    ("fidelity", "floor_concurrency"): 8,
    ("fidelity", "arms"): ["exl3-r11", "nvfp4-r2"],
    ("fidelity", "deadline_s"): 900,
    ("rule", "fidelity", "cells"): ["fidelity-corpus"],
    ("cells", "ramp", "stages"): 4,
    ("cells", "dataset", "sha256"): "9b2e" * 16,
    ("cells", "dataset", "output"): "cell",
    ("cells", "dataset", "nonce"): False,
    ("cells", "trace", "sha256"): "41d7" * 16,
    ("cells", "trace", "block_tokens"): 512,
    ("thresholds", "require_finish_reason"): True,
    ("thresholds", "max_gpu_slowdown_share"): 0.05,
    ("arms", "host"): "127.0.0.1",
    ("arms", "expected_weights_sha256"): "0f1c" * 16,
    ("arms", "mounts", "read_only"): True,
    ("arms", "probes", "smoke_requests"): 2,
    ("arms", "probes", "json_smoke_requests"): 2,
    ("arms", "probes", "json_smoke_max_tokens"): 1024,
    ("arms", "probes", "json_smoke"): False,
    ("arms", "probes", "json_smoke_off_reason"): "a base model, no chat template",
    ("arms", "probes", "poll_interval_s"): 1.0,
    ("arms", "router", "drain_command"): ["routerctl", "drain", "gpu-a"],
    ("arms", "router", "readmit_command"): ["routerctl", "readmit", "gpu-a"],
    ("arms", "router", "smoke_requests"): 2,
    ("arms", "simulator", "faults"): {"error_rate": 0.05},
    ("arms", "simulator", "legacy_names"): True,
    ("cells", "request_deadline_s"): 600,
    ("cells", "needle_depth"): 0.25,
    ("cells", "sampling", "seed"): False,
    ("cells", "length_finishes"): "include",
    ("cells", "sweep", "low"): 1.0,
    ("cells", "sweep", "high"): 16.0,
    ("cells", "sweep", "steps"): 6,
    ("campaign", "slo", "tpot_ms"): 50,
    ("campaign", "slo", "e2e_ms"): 30000,
    ("cells", "warmups"): 1,
    ("cells", "arms"): ["exl3-r11"],
    ("cells", "slo", "ttft_ms"): 2000,
    ("cells", "slo", "attainment"): 0.95,
    ("thresholds", "max_error_rate"): 0.01,
    ("thresholds", "max_oom"): 0,
    ("thresholds", "max_preemptions"): 0,
    ("thresholds", "max_refusals"): 0,
    ("thresholds", "counter_tolerance_tokens"): 16,
    ("thresholds", "cold_cache_max_hit_ratio"): 0.0,
    ("thresholds", "input_tolerance"): 0.05,
    ("thresholds", "needle_max_missed"): 0.25,
    ("thresholds", "engine_period_s"): 0.5,
    ("thresholds", "memory_period_s"): 2.0,
    ("thresholds", "min_coverage"): 0.95,
    ("thresholds", "max_consecutive_misses"): 2,
    ("thresholds", "stall_threshold_ms"): 20.0,
    ("thresholds", "max_request_stall_ms"): 50.0,
    ("thresholds", "max_schedule_lag_ms"): 100.0,
    ("thresholds", "max_stalled_requests"): 0.1,
    ("thresholds", "max_client_cpu_wait"): 0.1,
    ("families", "require"): ["spec_decode"],
    ("quality", "bands", "higher_is_better"): False,
    ("rule", "not_accepted"): "do_not_promote",
    ("rule", "criteria", "kinds"): ["natural"],
    ("rule", "criteria", "candidates"): ["nvfp4-r2"],
}


def field_reference() -> str:
    schema = matrix_schema()
    page = Page(schema, examples_found(_map_fields(schema)))
    return "\n".join([HEAD, *(page.section(table) for table in tables(schema))])


HEAD = """# Matrix fields

Every field of a matrix TOML, table by table: its type, default, limits, what it means and
an example. Generated from the models (`python -m evidence.bundle.schema_export`, which
also writes the editors' schema `evidence/schemas/matrix.schema.json`); a test fails when
they differ. How the fields work together: [docs/matrix.md](../matrix.md). Checks across
fields (one incumbent, distinct ports, a cell within each arm's context, a rule naming
known cells) are `faceoff validate`'s ([matrix.md](../matrix.md#checks-and-limits)).

Editors: a first line `#:schema PATH/evidence/schemas/matrix.schema.json` (relative to the
matrix file, or a URL) gives completion, hover help and checking in a TOML language server
(taplo; VS Code's Even Better TOML); `matrix/examples/*.toml` carry it, and the repository's
`.taplo.toml` maps them too.
"""


@dataclass(frozen=True)
class Table:
    """A TOML table of the matrix: its path (``("arms", "probes")``), schema, and whether it
    is an array of tables (``[[arms]]``)."""

    path: Path_
    node: dict[str, Any]
    many: bool = False

    @property
    def header(self) -> str:
        if not self.path:
            return "Top level"
        dotted = ".".join(self.path)
        if not self.many:
            return f"`[{dotted}]`"
        return f"`[[{dotted}]]`" + (" and `[defaults]`" if self.path == ("cells",) else "")

    def fields(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for name, field in self.node.get("properties", {}).items():
            if not (self.path == () and name == "defaults"):  # said under [[cells]]
                yield name, field


def tables(schema: dict[str, Any], table: Table | None = None) -> Iterator[Table]:
    """Each TOML table of the matrix, depth first."""
    table = table or Table((), schema)
    yield table
    for name, field in table.fields():
        inner = _table_of(schema, field, (*table.path, name))
        if inner is not None:
            yield from tables(schema, inner)


def _table_of(schema: dict[str, Any], field: dict[str, Any], path: Path_) -> Table | None:
    """The table a field holds (a model, or an array of them), if it holds one."""
    if field.get("type") == "array" and "$ref" in field.get("items", {}):
        return Table(path, _resolve(schema, field["items"]), many=True)
    target = _resolve(schema, field)
    return Table(path, target) if "$ref" in field and "properties" in target else None


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = {
            **schema["$defs"][node["$ref"].rsplit("/", 1)[1]],
            **{k: v for k, v in node.items() if k != "$ref"},
        }
    return node


@dataclass(frozen=True)
class Page:
    schema: dict[str, Any]
    found: dict[Path_, Any]  # the examples' values

    def section(self, table: Table) -> str:
        lines = [f"## {table.header}", ""]
        description = table.node.get("description")
        if description and table.path:
            lines += [_sentence(description), ""]
        if table.path == ("cells",):
            lines += [
                "`[defaults]` takes the same fields; a `[[cells]]` entry's own value wins.",
                "",
            ]
        required = set(table.node.get("required", []))
        lines += [self.line(table, name, field, name in required) for name, field in table.fields()]
        return "\n".join(lines) + "\n"

    def line(self, table: Table, name: str, field: dict[str, Any], required: bool) -> str:
        path = (*table.path, name)
        inner = _table_of(self.schema, field, path)
        kind = inner.header.replace(" and `[defaults]`", "") if inner else _type(self.schema, field)
        if inner:
            kind = f"{'array of tables' if inner.many else 'table'} {kind}"
        resolved = _resolve(self.schema, field)
        facts = [kind, "required" if required else _default(field), *_limits(resolved)]
        text = f"- **`{name}`** — {'; '.join(facts)}."
        description = field.get("description") or resolved.get("description")
        text += f" {_sentence(description)}" if description else ""
        if inner is None:
            text += f" Example: `{toml_key(name)} = {toml_value(self.example(path))}`."
        return text

    def example(self, path: Path_) -> Any:
        """The field's example: given for it, else for the same table's field elsewhere (an
        [slo] under [campaign] and under [[cells]])."""
        for known in (self.found, WRITTEN_EXAMPLES):
            if path in known:
                return known[path]
        same = [
            v for k, v in (*self.found.items(), *WRITTEN_EXAMPLES.items()) if k[-2:] == path[-2:]
        ]
        if not same or len(path) < 3:
            raise ValueError(f"no example for {'.'.join(path)}: add one to WRITTEN_EXAMPLES")
        return same[0]


def _type(schema: dict[str, Any], field: dict[str, Any]) -> str:
    if "anyOf" in field:
        return " or ".join(_type(schema, branch) for branch in field["anyOf"])
    node = _resolve(schema, field)
    if "enum" in node or "const" in node:
        values = node.get("enum", [node.get("const")])
        return ("one of " if len(values) > 1 else "") + ", ".join(
            f"`{toml_value(v)}`" for v in values
        )
    kind = node.get("type")
    if kind == "array":
        return f"array of {_type(schema, node.get('items', {}))}"
    values = node.get("additionalProperties")
    if kind == "object" and isinstance(values, dict):
        return f"table of names to {_type(schema, values)}"
    if node.get("format") == "date-time":
        return "offset date-time"
    return str(kind or "any value")


def _default(field: dict[str, Any]) -> str:
    if "default" not in field:
        return "optional"
    value = field["default"]
    if value in ([], {}):
        return "default empty"
    return f"default `{toml_value(value)}`"


LIMIT_WORDS = {
    "minimum": "≥ {}", "exclusiveMinimum": "> {}", "maximum": "≤ {}", "exclusiveMaximum": "< {}",
    "minItems": "at least {} item(s)", "minLength": "at least {} character(s)",
    "pattern": "matches `{}`",
}  # fmt: skip


def _limits(node: dict[str, Any]) -> list[str]:
    found = [words.format(_number(node[key])) for key, words in LIMIT_WORDS.items() if key in node]
    items = node.get("items")
    if isinstance(items, dict):
        found += [f"each {limit}" for limit in _limits(items)]
    return found


def _number(value: Any) -> str:
    return (
        f"{value:,}".replace(",", " ")
        if isinstance(value, int) and value >= 100_000
        else str(value)
    )


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", ")")) else text + "."


def _map_fields(schema: dict[str, Any]) -> set[Path_]:
    """The fields that are tables of names chosen by the user (env, variants, results …)."""
    return {
        (*table.path, name)
        for table in tables(schema)
        for name, field in table.fields()
        if _type(schema, field).startswith("table of")
    }


def examples_found(maps: set[Path_]) -> dict[Path_, Any]:
    """Field path (table names, no indices) -> the first value a shipped example gives it."""
    found: dict[Path_, Any] = {}
    for path in sorted(EXAMPLES_DIR.glob("*.toml")):
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
        cells = [raw.get("defaults", {}), *raw.get("cells", [])]
        raw = {**{k: v for k, v in raw.items() if k != "defaults"}, "cells": cells}
        for key, value in _leaves(raw, (), maps):
            found.setdefault(key, value)
    return found


def _leaves(value: Any, path: Path_, maps: set[Path_]) -> Iterator[tuple[Path_, Any]]:
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for item in value:
            yield from _leaves(item, path, maps)
    elif isinstance(value, dict) and path not in maps:
        for key, item in value.items():
            yield from _leaves(item, (*path, key), maps)
    else:
        yield path, value
