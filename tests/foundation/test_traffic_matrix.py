"""Production-shaped cells in the matrix: source files pinned, trace defaults, load shapes,
refusals that name the cell, and frozen ids that stay what they were."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import freeze
from flows.campaign.opening import refuse_changed_sources, write_frozen
from matrix.arrival import Arrival
from matrix.toml.reader import MatrixError, load_matrix
from tests.foundation.test_matrix import MINIMAL, write

TRACE = [
    {"timestamp": 0, "input_length": 900, "output_length": 8, "hash_ids": [0, 1]},
    {"timestamp": 2000, "input_length": 1400, "output_length": 9, "hash_ids": [0, 1, 2]},
    {"timestamp": 3000, "input_length": 600, "output_length": 7, "hash_ids": [5, 6]},
]


def data(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "data"
    folder.mkdir(exist_ok=True)
    trace, rows = folder / "trace.jsonl", folder / "rows.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in TRACE))
    rows.write_text('{"prompt": "one"}\n{"prompt": "two", "output_tokens": 12}\n')
    return trace, rows


def matrix_with(tmp_path: Path, cell: str) -> Path:
    data(tmp_path)
    return write(tmp_path, MINIMAL + f"\n[[cells]]\n{cell}")


TRACE_CELL = (
    'kind = "trace"\nconcurrency = 2\ntrace = { file = "data/trace.jsonl", format = "mooncake" }\n'
)
DATASET_CELL = (
    'kind = "dataset"\ninput_tokens = 512\nconcurrency = 1\nrequests = 4\n'
    'dataset = { file = "data/rows.jsonl", format = "prompts" }\n'
)


def test_existing_matrices_keep_their_frozen_ids(tmp_path: Path) -> None:
    """The new cell fields are left out of the frozen dump at their defaults."""
    matrix = load_matrix(write(tmp_path, MINIMAL))
    cell = matrix.model_dump(mode="json")["cells"][0]
    assert not {"burstiness", "ramp", "dataset", "trace", "prefix"} & set(cell)
    shared = load_matrix(write(tmp_path, MINIMAL + "prefix = { tokens = 256 }\n"))
    assert freeze(shared).matrix_id != freeze(matrix).matrix_id


def test_a_trace_cell_takes_its_count_length_and_arrival_from_its_records(tmp_path: Path) -> None:
    trace, _ = data(tmp_path)
    cell = load_matrix(matrix_with(tmp_path, TRACE_CELL)).cells[1]
    assert (cell.requests, cell.input_tokens, cell.arrival) == (3, 1400, Arrival.TRACE)
    assert cell.trace is not None and cell.trace.file == str(trace.resolve())
    assert cell.trace.sha256 == hashlib.sha256(trace.read_bytes()).hexdigest()
    assert not cell.cold  # a Mooncake trace reuses its prefixes by design
    first = load_matrix(matrix_with(tmp_path, TRACE_CELL + "requests = 2\n")).cells[1]
    assert (first.requests, first.input_tokens) == (2, 1400)


def test_a_dataset_cell_freezes_its_file_hash_and_stays_cold(tmp_path: Path) -> None:
    _, rows = data(tmp_path)
    cell = load_matrix(matrix_with(tmp_path, DATASET_CELL)).cells[1]
    assert cell.dataset is not None and cell.cold
    assert cell.dataset.sha256 == hashlib.sha256(rows.read_bytes()).hexdigest()
    warm = DATASET_CELL.replace('format = "prompts"', 'format = "prompts", nonce = false')
    assert not load_matrix(matrix_with(tmp_path, warm)).cells[1].cold


@pytest.mark.parametrize(
    ("cell", "hint"),
    [
        (TRACE_CELL + "requests = 4\n", "the trace has 3 records"),
        (TRACE_CELL + "deadline_s = 2\n", "span 3 s"),
        (TRACE_CELL.replace("trace.jsonl", "missing.jsonl"), "is not a file"),
        (DATASET_CELL.replace('"prompts" }', f'"prompts", sha256 = "{"0" * 64}" }}'), "pinned"),
        (DATASET_CELL.replace('kind = "dataset"', 'kind = "natural"'), "only a dataset cell"),
        ('kind = "dataset"\ninput_tokens = 9\nconcurrency = 1\nrequests = 1\n', "[cells.dataset]"),
        (TRACE_CELL + 'arrival = "poisson"\n', 'arrival = "trace"'),
        (TRACE_CELL + "rate = 2.0\n", "drop rate"),
    ],
)
def test_a_source_that_cannot_run_is_refused_naming_the_cell(
    tmp_path: Path, cell: str, hint: str
) -> None:
    with pytest.raises(MatrixError) as info:
        load_matrix(matrix_with(tmp_path, cell))
    assert hint in info.value.message
    assert "cells[1]" in info.value.message


SHAPED = 'kind = "natural"\ninput_tokens = 1024\nconcurrency = 4\nrequests = 8\n'


@pytest.mark.parametrize(
    ("extra", "hint"),
    [
        ('arrival = "gamma"\nrate = 2.0\n', "needs burstiness"),
        ('arrival = "poisson"\nrate = 2.0\nburstiness = 2.0\n', "burstiness shapes gamma"),
        ("burstiness = 2.0\n", "need an open-loop arrival"),
        ('arrival = "poisson"\nrate = 2.0\nramp = { start = 1.0, end = 4.0 }\n', "not both"),
        ('arrival = "poisson"\nramp = { start = 0.001, end = 0.002 }\n', "span"),
        ('arrival = "poisson"\nramp = { start = 1.0, end = 4.0, stages = 1 }\n', "stages"),
        ("prefix = { tokens = 1024 }\n", "leaves no room"),
    ],
)
def test_load_shapes_and_prefixes_that_cannot_run_are_refused(
    tmp_path: Path, extra: str, hint: str
) -> None:
    with pytest.raises(MatrixError) as info:
        load_matrix(write(tmp_path, MINIMAL + f"\n[[cells]]\n{SHAPED}{extra}"))
    assert hint in info.value.message


def test_a_prefix_opens_only_independent_prompts(tmp_path: Path) -> None:
    cell = 'kind = "session_reuse"\ninput_tokens = 1024\nconcurrency = 1\nrequests = 2\n'
    with pytest.raises(MatrixError, match="no independent prompts"):
        load_matrix(write(tmp_path, MINIMAL + f"\n[[cells]]\n{cell}prefix = {{ tokens = 64 }}\n"))


def test_gamma_and_ramp_cells_load_with_their_labels(tmp_path: Path) -> None:
    text = MINIMAL + f'\n[[cells]]\n{SHAPED}arrival = "gamma"\nburstiness = 0.5\nrate = 3.0\n'
    text += f'\n[[cells]]\n{SHAPED}arrival = "constant"\nramp = {{ start = 1.0, end = 5.0 }}\n'
    _, gamma, ramp = load_matrix(write(tmp_path, text)).cells
    assert (gamma.id, gamma.burstiness) == ("natural-1024-gamma-3rps", 0.5)
    assert ramp.id == "natural-1024-constant-ramp" and ramp.ramp is not None


def test_a_resume_over_a_changed_source_is_refused_naming_it_and_both_hashes(
    tmp_path: Path,
) -> None:
    path = matrix_with(tmp_path, DATASET_CELL)
    campaign_dir = tmp_path / "runs" / "tiny"
    campaign_dir.mkdir(parents=True)
    frozen = freeze(load_matrix(path))
    write_frozen(frozen, campaign_dir)
    refuse_changed_sources(frozen, campaign_dir)  # the same file: a resume may go on
    rows = tmp_path / "data" / "rows.jsonl"
    before = hashlib.sha256(rows.read_bytes()).hexdigest()
    rows.write_text(rows.read_text() + '{"prompt": "three"}\n')
    with pytest.raises(FaceoffError) as info:
        refuse_changed_sources(freeze(load_matrix(path)), campaign_dir)
    after = hashlib.sha256(rows.read_bytes()).hexdigest()
    message = info.value.message
    assert str(rows.resolve()) in message and before in message and after in message
