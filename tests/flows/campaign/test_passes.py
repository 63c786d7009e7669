"""Arm order across passes (incumbent first in odd passes, last in even ones: ABBA) and
across a pass's single-window cells."""

from __future__ import annotations

from pathlib import Path

from flows.campaign.passes import arm_order, walk_order
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


def test_single_window_cells_alternate_which_arm_runs_first(tmp_path: Path) -> None:
    matrix = load_matrix(write(tmp_path, MINIMAL))
    incumbent, candidate = matrix.arms
    cells = [matrix.cells[0].model_copy(update={"id": f"cell-{k}"}) for k in range(1, 5)]
    walks = walk_order([(incumbent, cells), (candidate, cells)])
    assert [(arm.name, [c.id for c in run]) for arm, run in walks] == [
        ("old", ["cell-1", "cell-3"]),
        ("new", ["cell-1", "cell-3", "cell-2", "cell-4"]),
        ("old", ["cell-2", "cell-4"]),
    ]
    first = {}
    for arm, run in walks:
        for c in run:
            first.setdefault(c.id, arm.name)
    assert first == {"cell-1": "old", "cell-2": "new", "cell-3": "old", "cell-4": "new"}


def test_one_cell_or_replicated_cells_keep_one_walk_per_arm(tmp_path: Path) -> None:
    single = load_matrix(write(tmp_path, MINIMAL))
    work = [(arm, single.cells) for arm in single.arms]
    assert walk_order(work) == work
    replicated = load_matrix(
        write(tmp_path, MINIMAL.replace("requests = 2\n", "requests = 2\nreplicates = 2\n"))
    )
    incumbent, candidate = replicated.arms
    by_pass = [[c for c in replicated.cells if c.pass_index == k] for k in (1, 2)]
    work = [(incumbent, by_pass[0]), (candidate, by_pass[0]),
            (incumbent, by_pass[1]), (candidate, by_pass[1])]  # fmt: skip
    assert [arm.name for arm, _ in walk_order(work)] == ["old", "new", "new", "old"]
