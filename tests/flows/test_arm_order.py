"""Arm order across passes: incumbent first in odd passes, last in even ones (ABBA)."""

from __future__ import annotations

from pathlib import Path

from flows.campaign.passes import arm_order
from matrix.toml.reader import load_matrix
from tests.foundation.test_matrix import MINIMAL, write


def test_passes_alternate_which_arm_runs_first(tmp_path: Path) -> None:
    matrix = load_matrix(
        write(tmp_path, MINIMAL.replace("requests = 2\n", "requests = 2\nreplicates = 4\n"))
    )
    incumbent, candidate = matrix.arms
    orders = []
    for index in (1, 2, 3, 4):
        cells = [c for c in matrix.cells if c.pass_index == index]
        work = [(incumbent, cells), (candidate, cells)]
        orders.append([arm.name for arm, _ in arm_order(work, index)])
    assert orders == [["old", "new"], ["new", "old"], ["old", "new"], ["new", "old"]]
