"""Open-loop cells and sweeps in the matrix: declaration, refusals that name the cell, freezing."""

from __future__ import annotations

from pathlib import Path

import pytest

from faceoff.formats.frozen_matrix import freeze
from matrix.arrival import Arrival
from matrix.campaign_plan import plan
from matrix.toml.reader import MatrixError, load_matrix
from tests.foundation.test_matrix import MINIMAL, write

CLOSED = 'kind = "natural"\ninput_tokens = 1024\nconcurrency = 1\nrequests = 2\n'
SLO = "seed = 7\nslo = { ttft_ms = 500 }\n"


def with_cell(extra: str, campaign: str = "seed = 7\n") -> str:
    return MINIMAL.replace("seed = 7\n", campaign) + f"\n[[cells]]\n{CLOSED}{extra}"


def test_an_open_loop_cell_and_a_sweep_load_with_their_request_counts(tmp_path: Path) -> None:
    text = with_cell('arrival = "poisson"\nrate = 4.5\n', SLO)
    text += f'\n[[cells]]\n{CLOSED}arrival = "constant"\n'
    text += "sweep = { rates = [1.0, 2.0, 4.0] }\n"
    matrix = load_matrix(write(tmp_path, text))
    closed, poisson, ladder = matrix.cells
    assert poisson.id == "natural-1024-poisson-4.5rps"
    assert (closed.arrival, closed.open_loop, closed.scored_requests) == (Arrival.CLOSED, False, 2)
    assert (poisson.arrival, poisson.rate, poisson.scored_requests) == (Arrival.POISSON, 4.5, 2)
    assert (ladder.id, ladder.steps, ladder.scored_requests) == (
        "natural-1024-constant-sweep",
        3,
        6,
    )
    assert plan(matrix).arms[0].scored_requests == 2 + 2 + 6


def test_a_closed_loop_matrix_keeps_its_frozen_id(tmp_path: Path) -> None:
    """The new fields are left out of the frozen dump at their defaults."""
    matrix = load_matrix(write(tmp_path, MINIMAL))
    dump = matrix.model_dump(mode="json")
    assert not {"arrival", "rate", "sweep"} & set(dump["cells"][0])
    assert "max_schedule_lag_ms" not in dump["thresholds"]
    lagged = load_matrix(write(tmp_path, MINIMAL + "\n[thresholds]\nmax_schedule_lag_ms = 50\n"))
    assert freeze(lagged).matrix_id != freeze(matrix).matrix_id


@pytest.mark.parametrize(
    ("extra", "campaign", "hint"),
    [
        ("rate = 2.0\n", "seed = 7\n", 'add arrival = "poisson" or "constant"'),
        ('arrival = "poisson"\n', "seed = 7\n", "needs rate = <requests/s> or a [cells.sweep]"),
        ('arrival = "poisson"\nrate = 1.0\nsweep = { rates = [1.0, 2.0] }\n', SLO, "not both"),
        ('arrival = "constant"\nsweep = { rates = [1.0, 2.0] }\n', "seed = 7\n", "no SLO"),
        ('arrival = "constant"\nsweep = { rates = [3.0, 2.0] }\n', SLO, "strictly ascending"),
        ('arrival = "bursty"\nrate = 1.0\n', "seed = 7\n", "'poisson'"),
        ('arrival = "poisson"\nrate = 0\n', "seed = 7\n", "greater than 0"),
        ('arrival = "poisson"\nrate = 0.0005\n', "seed = 7\n", "span 2000 s"),
    ],
)
def test_an_open_loop_cell_that_cannot_run_is_refused_naming_it(
    tmp_path: Path, extra: str, campaign: str, hint: str
) -> None:
    with pytest.raises(MatrixError) as info:
        load_matrix(write(tmp_path, with_cell(extra, campaign)))
    assert hint in info.value.message
    assert "natural-1024-" in info.value.message  # the cell, by its id


def test_a_pattern_of_dependent_requests_stays_closed_loop(tmp_path: Path) -> None:
    text = with_cell('arrival = "poisson"\nrate = 1.0\n').replace(
        'kind = "natural"\ninput_tokens = 1024\nconcurrency = 1\nrequests = 2\narrival',
        'kind = "session_reuse"\ninput_tokens = 1024\nconcurrency = 1\nrequests = 2\narrival',
    )
    with pytest.raises(MatrixError, match="runs its pattern as a closed loop"):
        load_matrix(write(tmp_path, text))
