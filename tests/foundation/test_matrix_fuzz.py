"""Generated matrix files and mutations of the shipped examples: every one ends in a
``Matrix`` or one ``MatrixError`` line, and none hangs or crashes the loader."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matrix.model import Matrix
from matrix.toml.reader import MatrixError, load_matrix
from tests.foundation.cli import REPO

EXAMPLES = sorted((REPO / "matrix" / "examples").glob("*.toml"))
SAFETY_S = 5.0  # about 0.05 s here; generous so a loaded host cannot fail it, yet far below a hang
FIELDS = [
    *("campaign", "name", "seed", "arms", "cells", "role", "lane", "image", "port", "host"),
    *("kind", "input_tokens", "concurrency", "requests", "sampling", "max_tokens", "defaults"),
    *("thresholds", "families", "rule", "criteria", "simulator", "profile", "replicates"),
]
SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

scalars = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
keys = st.one_of(st.sampled_from(FIELDS), st.from_regex(r"[a-z_]{1,12}", fullmatch=True))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=20,
)


def toml_value(value: Any) -> str:
    """A generated value as an inline TOML value (tables inline, so any nesting is one line)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return {"inf": "inf", "-inf": "-inf", "nan": "nan"}.get(str(value), repr(value))
    if isinstance(value, str):
        return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}"
                             for c in value) + '"'  # fmt: skip
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"


def ends_cleanly(path: Path) -> None:
    started = time.monotonic()
    try:
        outcome: Matrix | str = load_matrix(path)
    except MatrixError as error:
        outcome = error.message
    assert isinstance(outcome, Matrix) or "\n" not in outcome, outcome
    assert time.monotonic() - started < SAFETY_S


@SETTINGS
@given(st.dictionaries(keys, values, max_size=6))
def test_a_generated_document_loads_or_is_one_error(tmp_path: Path, doc: dict[str, Any]) -> None:
    path = tmp_path / "matrix.toml"
    path.write_text("".join(f"{k} = {toml_value(v)}\n" for k, v in doc.items()))
    ends_cleanly(path)


mutations = st.sampled_from(["delete", "duplicate", "replace", "truncate", "insert"])


@SETTINGS
@given(
    st.sampled_from(EXAMPLES),
    st.lists(st.tuples(mutations, st.integers(min_value=0), values), min_size=1, max_size=4),
)
def test_a_mutated_example_loads_or_is_one_error(
    tmp_path: Path, example: Path, edits: list[tuple[str, int, Any]]
) -> None:
    lines = example.read_text().splitlines()
    for kind, at, value in edits:
        i = at % max(len(lines), 1)
        if kind == "delete" and lines:
            del lines[i]
        elif kind == "duplicate" and lines:
            lines.insert(i, lines[i])
        elif kind == "replace" and lines and "=" in lines[i]:
            lines[i] = lines[i].split("=", 1)[0] + "= " + toml_value(value)
        elif kind == "truncate" and lines:
            lines[i] = lines[i][: len(lines[i]) // 2]
        else:
            lines.insert(i, f"{toml_value(value)[:20]} = {toml_value(value)}")
    path = tmp_path / "matrix.toml"
    path.write_text("\n".join(lines) + "\n")
    ends_cleanly(path)
