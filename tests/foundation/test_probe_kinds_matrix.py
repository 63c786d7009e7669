"""The needle_search and agentic cell kinds in the matrix: what an entry may leave out,
and each impossible declaration refused naming the cell and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from faceoff.formats.frozen_matrix import frozen_content
from matrix.toml.reader import MatrixError, load_matrix
from tests.foundation.test_matrix import MINIMAL, write

SEARCH = (
    '\n[[cells]]\nkind = "needle_search"\n'
    "search = { low = 500, high = 6000, step = 250, budget = 8 }\n"
)
AGENTIC = (
    '\n[[cells]]\nkind = "agentic"\ninput_tokens = 1024\nconcurrency = 1\nrequests = 6\n'
    "agentic = { turns = 3, tool_result_tokens = 256 }\n"
)


def test_a_search_entry_takes_its_input_and_budget_from_its_search(tmp_path: Path) -> None:
    # [defaults] hold other cells' values; a search keeps its own
    text = MINIMAL.replace("[[cells]]", "[defaults]\nrequests = 3\nwarmups = 2\n\n[[cells]]")
    search = load_matrix(write(tmp_path, text + SEARCH)).cells[1]
    assert search.id == "needle-search-6000-c1"
    assert (search.input_tokens, search.requests, search.concurrency, search.warmups) == (
        6000, 8, 1, 0,
    )  # fmt: skip
    assert search.cold


def test_an_agentic_cell_is_warm_by_design_and_other_cells_keep_their_content(
    tmp_path: Path,
) -> None:
    matrix = load_matrix(write(tmp_path, MINIMAL + AGENTIC + SEARCH))
    agentic = matrix.cells[1]
    assert agentic.id == "agentic-1024-c1" and not agentic.cold
    assert agentic.peak_input_tokens == 1024 + 2 * 256
    # the new tables are left out of the frozen content of a cell without them (ids kept)
    cells = frozen_content(matrix, matrix.families.resolve())["matrix"]["cells"]
    assert not {"search", "agentic"} & set(cells[0])
    assert "agentic" in cells[1] and "search" in cells[2]


LOW_ABOVE_HIGH = "low = 7000 must be below high = 6000"


@pytest.mark.parametrize(
    ("entry", "where", "hint"),
    [
        (SEARCH.replace("low = 500", "low = 7000"), ".search", LOW_ABOVE_HIGH),
        (SEARCH.replace("step = 250", "step = 5500"), ".search", "step = 5500 must be below"),
        (SEARCH.replace("budget = 8", "budget = 1"), ".search.budget", "greater than or equal"),
        (SEARCH + "requests = 5\n", "",
         "requests = 5 but a needle_search cell's requests is search.budget = 8; drop requests"),
        (SEARCH + "input_tokens = 4000\n", "",
         "input_tokens = 4000 but a needle_search cell's input_tokens is search.high = 6000"),
        (SEARCH + "concurrency = 2\n", "", "concurrency = 2 but"),
        (SEARCH.replace("search = {", 'arrival = "poisson"\nrate = 2.0\nsearch = {'), "",
         "runs its pattern as a closed loop"),
        ('\n[[cells]]\nkind = "needle_search"\ninput_tokens = 6000\nconcurrency = 1\n'
         "requests = 4\n", "", "needs search = { low, high, step, budget }"),
        (SEARCH.replace('"needle_search"', '"needle"\ninput_tokens = 6000\nconcurrency = 1\n'
                        "requests = 2"), "", "only a needle_search cell searches"),
        (AGENTIC.replace("requests = 6", "requests = 7"), "",
         "requests = 7 is not a whole number of 3-turn conversations"),
        (AGENTIC.replace("concurrency = 1", "concurrency = 2"), "",
         "concurrency = 2: an agentic cell replays one conversation at a time"),
        (AGENTIC.replace("turns = 3", "turns = 9"), ".agentic.turns", "less than or equal to 8"),
        (AGENTIC.replace("agentic = {", "xagentic = {"), ".xagentic", "unknown field"),
        (AGENTIC.replace('kind = "agentic"', 'kind = "natural"'), "", "only an agentic cell"),
        ('\n[[cells]]\nkind = "agentic"\ninput_tokens = 1024\nconcurrency = 1\nrequests = 4\n',
         "", "needs agentic = { turns, tool_result_tokens }"),
    ],
)  # fmt: skip
def test_impossible_probe_declarations_name_the_cell_and_field(
    tmp_path: Path, entry: str, where: str, hint: str
) -> None:
    with pytest.raises(MatrixError) as info:
        load_matrix(write(tmp_path, MINIMAL + entry))
    message = info.value.message
    assert "cells[1] (id=" in message, message
    if where:
        assert f"'){where}:" in message, message
    assert hint in message, message


def test_an_agentic_last_turn_must_fit_the_declared_context(tmp_path: Path) -> None:
    text = MINIMAL.replace('served_model = "m"\n', 'served_model = "m"\n[arms.recipe]\n'
                           "max_model_len = 1400\n", 1)  # fmt: skip
    text = text.replace("[[cells]]", "[defaults]\nsampling = { max_tokens = 16 }\n\n[[cells]]", 1)
    with pytest.raises(MatrixError, match=r"input_tokens = 1024 \(grown to 1536 by the last"):
        load_matrix(write(tmp_path, text + AGENTIC))


def test_a_rule_that_would_judge_a_search_by_latency_is_refused(tmp_path: Path) -> None:
    rule = '\n[rule]\n[[rule.criteria]]\nmetric = "ttft_s"\nnon_inferiority = 0.05\n'
    with pytest.raises(MatrixError, match="judges the needle_search cell"):
        load_matrix(write(tmp_path, MINIMAL + rule + SEARCH))
    scoped = rule + 'kinds = ["natural"]\n'
    assert load_matrix(write(tmp_path, MINIMAL + scoped + SEARCH)).rule is not None
