"""What the model refuses, said field first: each message starts with the field as the user
wrote it in the file (``cells[0].concurency``, ``arms[1] (name='new').port``).
The same concept at another layer: ``faceoff.errors``.

A grid entry expands to many cells; an error that every cell of the entry shares is said
once, of the entry (``cells[0].requests``), not once per cell. Errors on fields the user
wrote come first, a misspelt field first of all (it explains a later "Field required");
an id faceoff generated from a value that is missing or wrong is not reported on its own
(the value is). Checks across fields raise ``FieldError`` naming the field to fix, so
that their messages start with it too.
"""

from __future__ import annotations

import difflib
import re
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from matrix.fields import SLUG, FieldError
from matrix.model import Matrix

MAX_ERRORS_SHOWN = 5
TOML_WORDS = (("an object", "a table"), ("a valid array", "an array"), ("a valid list", "an array"))
Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Origin:
    """Where an expanded cell came from in the file: its ``[[cells]]`` entry, its id, how
    many cells the entry expanded to, and whether the id was written or generated."""

    entry: int
    cell_id: object
    cells: int
    written_id: bool

    @property
    def label(self) -> str:
        shown = isinstance(self.cell_id, str) and re.match(SLUG, self.cell_id)
        return f"cells[{self.entry}] (id={self.cell_id!r})" if shown else f"cells[{self.entry}]"


@dataclass(frozen=True)
class FieldProblem:
    """One error: where (the entry or table, then the field within it) and what."""

    head: str  # ``cells[0] (id='…')``, ``arms[1] (name='new')``, ``campaign``
    field: str  # ``.requests``, ``.sampling.top_p``, ``[0]``, or "" for the table itself
    message: str
    entry: tuple[str, int] | None  # (``cells``, entry) or (``arms``, index): dedup key
    written: bool  # the user wrote this field
    unknown: bool  # a field the model does not have (likely misspelt)
    generated_id: bool  # about a cell id faceoff generated

    @property
    def key(self) -> tuple[object, str, str]:
        """Problems of one key are one problem: the same field of the same entry or table."""
        return (self.entry or self.head, self.field, self.message)

    def said(self, head: str | None = None) -> str:
        return f"{head or self.head}{self.field}: {self.message}"


def describe(exc: ValidationError, data: dict[str, Any], origins: list[Origin]) -> str:
    problems = [_problem(err, data, origins) for err in exc.errors()]
    if any(not p.generated_id for p in problems):
        problems = [p for p in problems if not p.generated_id]
    lines = _once_per_entry(problems)
    lines.sort(key=lambda line: (not line[0].unknown, not line[0].written))  # stable
    shown = [said for _, said in lines[:MAX_ERRORS_SHOWN]]
    if len(lines) > MAX_ERRORS_SHOWN:
        shown.append(f"and {len(lines) - MAX_ERRORS_SHOWN} more")
    return "; ".join(shown)


def _once_per_entry(problems: list[FieldProblem]) -> list[tuple[FieldProblem, str]]:
    """Each problem said once; one shared by several cells of an entry, of the entry."""
    counts: dict[tuple[object, str, str], int] = {}
    for p in problems:
        counts[p.key] = counts.get(p.key, 0) + 1
    lines: list[tuple[FieldProblem, str]] = []
    seen: set[tuple[object, str, str]] = set()
    for p in problems:
        key = p.key
        if key in seen:
            continue
        seen.add(key)
        shared = p.entry is not None and p.entry[0] == "cells" and counts[key] > 1
        lines.append((p, p.said(f"cells[{p.entry[1]}]" if shared and p.entry else None)))
    return lines


def _problem(err: Any, data: dict[str, Any], origins: list[Origin]) -> FieldProblem:
    loc: Loc = tuple(err["loc"])
    cause = err.get("ctx", {}).get("error")
    if isinstance(cause, FieldError):
        loc = (*loc, *cause.loc)
    head, rest, entry, origin = _head(loc, data, origins)
    field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in rest)
    is_id = origin is not None and not origin.written_id and rest[:1] == ("id",)
    return FieldProblem(
        head=head,
        field=field,
        message=_message(err, loc),
        entry=entry,
        written=_written(loc, data),
        unknown=err["type"] == "extra_forbidden",
        generated_id=is_id,
    )


def _head(
    loc: Loc, data: dict[str, Any], origins: list[Origin]
) -> tuple[str, Loc, tuple[str, int] | None, Origin | None]:
    if not loc:
        return "matrix", (), None, None
    top, *rest = loc
    if top == "cells" and rest and isinstance(rest[0], int) and rest[0] < len(origins):
        origin = origins[rest[0]]
        return origin.label, tuple(rest[1:]), ("cells", origin.entry), origin
    if top == "arms" and rest and isinstance(rest[0], int):
        arms = data.get("arms")
        arm = arms[rest[0]] if isinstance(arms, list) and rest[0] < len(arms) else None
        name = arm.get("name") if isinstance(arm, dict) else None
        head = f"arms[{rest[0]}] (name={name!r})" if name else f"arms[{rest[0]}]"
        return head, tuple(rest[1:]), ("arms", rest[0]), None
    return str(top), tuple(rest), None, None


def _written(loc: Loc, data: dict[str, Any]) -> bool:
    """Whether the user wrote the field at ``loc`` (an expanded cell: in its entry)."""
    node: Any = data
    for part in loc:
        in_table = isinstance(node, dict) and part in node
        in_array = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if not (in_table or in_array):
            return False
        node = node[part]
    return True


def _message(err: Any, loc: Loc) -> str:
    if err["type"] == "extra_forbidden":
        known = _known_fields(loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), known, n=3)
        if close:
            return f"unknown field (did you mean {' or '.join(map(repr, close))}?)"
        return f"unknown field; known: {', '.join(known)}" if known else "unknown field"
    if err["type"] == "string_pattern_mismatch" and err.get("ctx", {}).get("pattern") == SLUG:
        return (
            f"{err['input']!r} is not a name faceoff can use: 1 to 63 of a-z, 0-9, '.', '_', '-', "
            "starting with a letter or digit (names become folder names)"
        )
    if err["type"] == "int_type" and isinstance(err.get("input"), float):  # strict says less
        return "Input should be a valid integer, got a number with a fractional part"
    msg = str(err["msg"]).removeprefix("Value error, ")
    for json_word, toml_word in TOML_WORDS:  # strict validation speaks JSON
        msg = msg.replace(json_word, toml_word)
    return msg


def _known_fields(loc: Loc) -> list[str]:
    """The field names of the table at ``loc`` (a typo's likely intent is among them)."""
    model: type[BaseModel] | None = Matrix
    for part in loc:
        if isinstance(part, int) or model is None:
            continue
        field = model.model_fields.get(str(part))
        model = _table_model(field.annotation) if field is not None else None
    return sorted(model.model_fields) if model is not None else []


def _table_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):  # list[Arm], SimulatorLane | None
        found = _table_model(arg)
        if found is not None:
            return found
    return None
