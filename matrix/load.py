"""Reading a matrix TOML: grid expansion, defaults, and errors that name the field.

A ``[[cells]]`` entry may give lists for ``input_tokens`` and ``concurrency``; it
expands into one cell per combination, with ids like ``natural-10240-c1`` unless
an ``id`` template (``"nat-{input_tokens}-c{concurrency}"``) is given. A
``[defaults]`` table supplies cell fields that an entry does not set.
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from faceoff.errors import FaceoffError
from matrix.model import Matrix

GRID_FIELDS = ("input_tokens", "concurrency")


class MatrixError(FaceoffError):
    """A matrix file that cannot be used, with the file and field named."""


@dataclass(frozen=True)
class Origin:
    """Where an expanded cell came from in the file."""

    entry: int
    label: str


def load_matrix(path: Path) -> Matrix:
    path = Path(path)
    raw = _read_toml(path)
    data, origins = expand(raw)
    try:
        return Matrix.model_validate(data)
    except ValidationError as exc:
        raise MatrixError(
            _describe(exc, data, origins),
            where=str(path),
            fix="Correct the field(s) named above and run `faceoff validate` again",
        ) from exc
    except ValueError as exc:  # raised by expansion helpers
        raise MatrixError(str(exc), where=str(path)) from exc


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise MatrixError("matrix file not found", where=str(path), fix="check the path") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MatrixError(
            f"malformed TOML: {exc}",
            where=str(path),
            fix="Fix the syntax at that line (strings need quotes, tables need [brackets])",
        ) from exc


def expand(raw: dict[str, Any]) -> tuple[dict[str, Any], list[Origin]]:
    """Apply ``[defaults]`` and expand cell grids; returns the data and each cell's origin."""
    data = {k: v for k, v in raw.items() if k != "defaults"}
    defaults = raw.get("defaults", {})
    cells: list[dict[str, Any]] = []
    origins: list[Origin] = []
    for index, entry in enumerate(raw.get("cells", [])):
        if not isinstance(entry, dict):
            cells.append(entry)
            origins.append(Origin(index, f"cells[{index}]"))
            continue
        for cell in _expand_entry({**_deep_defaults(defaults, entry)}):
            cells.append(cell)
            origins.append(Origin(index, f"cells[{index}] (id={cell.get('id')!r})"))
    data["cells"] = cells
    return data, origins


def _deep_defaults(defaults: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    merged = dict(defaults)
    for key, value in entry.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _expand_entry(entry: dict[str, Any]) -> list[dict[str, Any]]:
    axes = [_as_list(entry.get(name)) for name in GRID_FIELDS]
    template = entry.get("id")
    is_grid = any(len(axis) > 1 for axis in axes)
    cells = []
    for combo in itertools.product(*axes):
        cell = dict(entry)
        cell.update(dict(zip(GRID_FIELDS, combo, strict=True)))
        cell["id"] = _cell_id(cell, template, is_grid)
        cells.append(cell)
    return cells


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _cell_id(cell: dict[str, Any], template: Any, is_grid: bool) -> Any:
    if isinstance(template, str) and "{" in template:
        return template.format(**{k: cell.get(k) for k in ("kind", *GRID_FIELDS)})
    if template is not None and not is_grid:
        return template
    kind = str(cell.get("kind", "cell")).replace("_", "-")
    base = f"{kind}-{cell.get('input_tokens')}-c{cell.get('concurrency')}"
    return f"{template}-{base}" if template else base


def _describe(exc: ValidationError, data: dict[str, Any], origins: list[Origin]) -> str:
    return "; ".join(
        f"{_field_path(err['loc'], data, origins)}: {_message(err)}" for err in exc.errors()
    )


def _message(err: Any) -> str:
    msg = str(err["msg"])
    return msg.removeprefix("Value error, ")


def _field_path(loc: tuple[Any, ...], data: dict[str, Any], origins: list[Origin]) -> str:
    if not loc:
        return "matrix"
    head, *rest = loc
    parts = [str(head)]
    if head == "cells" and rest and isinstance(rest[0], int) and rest[0] < len(origins):
        parts = [origins[rest[0]].label]
        rest = rest[1:]
    elif head == "arms" and rest and isinstance(rest[0], int):
        arms = data.get("arms", [])
        name = arms[rest[0]].get("name") if rest[0] < len(arms) else None
        parts = [f"arms[{rest[0]}] (name={name!r})" if name else f"arms[{rest[0]}]"]
        rest = rest[1:]
    for part in rest:
        parts.append(f"[{part}]" if isinstance(part, int) else f".{part}")
    return "".join(parts)
