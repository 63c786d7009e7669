"""The live view's ETA: a pure function of the plan, the deadlines and the pace."""

from __future__ import annotations

from pathlib import Path

from faceoff.formats.frozen_matrix import freeze
from flows.cli.views.durations import clock
from flows.cli.views.eta import deadline_bound, eta
from matrix.campaign_plan import CellRunKey
from matrix.model import Matrix
from matrix.toml.reader import load_matrix
from tests.e2e.matrices import arm, campaign, write_matrix


def two_by_two(folder: Path) -> Matrix:
    """inc and cand, startup 60 s, one warmup each; two cells of 60 s deadlines."""
    data = campaign("eta", [arm("inc", "incumbent"), arm("cand", "candidate")])
    return freeze(load_matrix(write_matrix(folder, data))).matrix


def test_the_bound_pays_each_unstarted_lane_its_startup_and_warmups(tmp_path: Path) -> None:
    matrix = two_by_two(tmp_path)
    restoration = deadline_bound(matrix, [CellRunKey(c.id, a.name)
                                          for c in matrix.cells for a in matrix.arms])  # fmt: skip
    assert restoration > 60  # the incumbent's startup and its smokes are always left
    # nothing finished: per arm startup 60 + warmups 60 + two cells of 60
    assert deadline_bound(matrix, []) == restoration + 2 * (60 + 60 + 120)
    # inc's first cell ran: its lane is up, only its second cell is left
    one = [CellRunKey("natural-600-c1", "inc")]
    assert deadline_bound(matrix, one) == restoration + 60 + (60 + 60 + 120)


def test_the_eta_is_the_pace_times_what_is_left_and_never_above_the_bound(tmp_path: Path) -> None:
    matrix = two_by_two(tmp_path)
    before = eta(matrix, [], elapsed_s=30.0, finished_here=0)
    assert before.remaining_s is None and before.line.startswith("ETA ≤ ")
    done = [CellRunKey("natural-600-c1", "inc")]
    paced = eta(matrix, done, elapsed_s=30.0, finished_here=1)
    assert paced.remaining_s == 90.0
    assert paced.line == f"ETA ~1:30 (≤ {clock(paced.bound_s)} by the deadlines)"
    halfway = eta(matrix, done, elapsed_s=30.0, finished_here=1, running_done=0.5)
    assert halfway.remaining_s == 75.0  # 2.5 cell runs left at 30 s each
    every = [CellRunKey(c.id, a.name) for c in matrix.cells for a in matrix.arms]
    last = eta(matrix, every, elapsed_s=120.0, finished_here=4)
    assert last.remaining_s == 0 and last.line.startswith("ETA: restoration and the bundle (≤ ")
    slow = eta(matrix, done, elapsed_s=10_000.0, finished_here=1)
    assert slow.remaining_s == slow.bound_s
    assert clock(3725) == "1:02:05" and clock(65) == "1:05"
