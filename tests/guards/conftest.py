"""Fixtures over the captured cell attempts; variants no simulator fault produces are
derived with the capture module's documented journal edits, into a temporary folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from faceoff.formats.frozen_matrix import FrozenMatrix, read_frozen
from tests.data.guards.capture import derive
from tests.guards.helpers import CELLS, DATA


@pytest.fixture(scope="session")
def frozen() -> FrozenMatrix:
    return read_frozen(DATA / "matrix.frozen.json")


@pytest.fixture
def derived(tmp_path: Path) -> Callable[[Callable[[list[str]], str]], Path]:
    """cells/natural copied to a temporary folder with one documented journal edit."""

    def make(edit: Callable[[list[str]], str]) -> Path:
        target = tmp_path / edit.__name__
        derive(CELLS / "natural", target, edit)
        return target

    return make
