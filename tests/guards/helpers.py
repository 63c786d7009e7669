"""Captured cell attempts (tests/data/guards/cells) and small ways to vary them.

Each folder under ``cells/`` was run for real against the simulator by
``tests/data/guards/capture.py``; its docstring lists how each was produced.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from faceoff.formats.frozen_matrix import FrozenMatrix
from guards.artifacts import CellArtifacts, load_cell

DATA = Path(__file__).resolve().parents[1] / "data" / "guards"
CELLS = DATA / "cells"


def load(name: str) -> CellArtifacts:
    return load_cell(CELLS / name)


def num(value: object) -> float:
    """An evidence value that must be a number."""
    assert isinstance(value, int | float) and not isinstance(value, bool), value
    return value


def with_thresholds(frozen: FrozenMatrix, **changes: Any) -> FrozenMatrix:
    """The same frozen matrix (same id) judged with other thresholds: a unit-test lever."""
    matrix = frozen.matrix
    thresholds = matrix.thresholds.model_copy(update=changes)
    return frozen.model_copy(
        update={"matrix": matrix.model_copy(update={"thresholds": thresholds})}
    )


def with_record(art: CellArtifacts, **changes: Any) -> CellArtifacts:
    """The same artifacts with cell.json facts changed (what the flow would have recorded)."""
    return dataclasses.replace(art, record=art.record.model_copy(update=changes))
