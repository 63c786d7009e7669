"""replicates = "auto" with max_passes: a sequential cell's passes, and what it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from faceoff.formats.frozen_matrix import freeze
from matrix.toml.reader import MatrixError, load_matrix
from tests.foundation.test_matrix import MINIMAL, write

RULE = '\n[rule]\n[[rule.criteria]]\nmetric = "ttft_s"\nnon_inferiority = 0.05\n'
AUTO = MINIMAL.replace("requests = 2\n", 'requests = 2\nreplicates = "auto"\nmax_passes = 3\n')


def test_an_auto_cell_plans_its_max_passes_as_sequential_replicates(tmp_path: Path) -> None:
    matrix = load_matrix(write(tmp_path, AUTO + RULE))
    assert [c.id for c in matrix.cells] == [f"natural-1024-c1-r{k}" for k in (1, 2, 3)]
    assert all(c.sequential and c.prompt_id == "natural-1024-c1" for c in matrix.cells)
    assert [c.pass_index for c in matrix.cells] == [1, 2, 3]


def test_a_fixed_replicate_keeps_its_frozen_content(tmp_path: Path) -> None:
    fixed = load_matrix(
        write(tmp_path, MINIMAL.replace("requests = 2\n", "requests = 2\nreplicates = 3\n"))
    )
    dumped = fixed.model_dump(mode="json")["cells"][0]["replicate"]
    assert dumped == {"of": "natural-1024-c1", "index": 1, "count": 3}  # no "sequential" key
    assert not fixed.cells[0].sequential
    assert freeze(fixed).matrix_id != freeze(load_matrix(write(tmp_path, AUTO + RULE))).matrix_id


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            MINIMAL.replace("requests = 2\n", 'requests = 2\nreplicates = "auto"\n') + RULE,
            'cells[0].max_passes: replicates = "auto" needs max_passes',
        ),
        (
            MINIMAL.replace("requests = 2\n", "requests = 2\nmax_passes = 3\n") + RULE,
            'cells[0].max_passes: only with replicates = "auto"',
        ),
        (AUTO, "'natural-1024-c1' has replicates = \"auto\", but no [rule] criterion judges it"),
    ],
    ids=["auto-without-max-passes", "max-passes-without-auto", "auto-without-rule"],
)
def test_a_sequential_cell_without_what_it_needs_is_refused_naming_it(
    tmp_path: Path, text: str, said: str
) -> None:
    with pytest.raises(MatrixError) as caught:
        load_matrix(write(tmp_path, text))
    assert said in str(caught.value)
