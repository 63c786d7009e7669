"""The needle rule on real cell runs: a lane that garbles the marker fails the cell.

The guards on a needle search run for real: its misses are its answer, its probes are
what the terminal rule counts, and both arms' plans pair on the declared range.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.settings import CollectorSettings
from faceoff.formats.attempt.journal import JOURNAL_NAME
from faceoff.formats.attempt.verdict import Outcome
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from faceoff.formats.reasons import Disposition, Reason
from guards.artifacts import load_cell
from guards.judge import judge, judge_cell, judge_pair
from matrix.toml.reader import load_matrix
from simulator.launch import running
from tests.conftest import free_port
from tests.guards.cellrun import CellRun, run_cell
from tests.guards.helpers import with_record

MATRIX = """
schema_version = 1
[campaign]
name = "guards-needle"
seed = 5

[[arms]]
name = "incumbent"
role = "incumbent"
lane = "simulator"
port = {incumbent}
served_model = "sim-tiny"
[arms.simulator]
profile = "tiny"

[[arms]]
name = "candidate"
role = "candidate"
lane = "simulator"
port = {candidate}
served_model = "sim-tiny"
[arms.simulator]
profile = "tiny"
faults = {{ needle_miss_above_tokens = 300 }}

[[cells]]
id = "needle-600-c1"
kind = "needle"
input_tokens = 600
concurrency = 1
requests = 3
deadline_s = 60
sampling = {{ max_tokens = 48, reasoning_effort = "low" }}

[thresholds]
engine_period_s = 0.1
memory_period_s = 0.25
min_coverage = 0.2
max_consecutive_misses = 40
max_stalled_requests = 1.0
max_client_cpu_wait = 1.0
{extra}

[families.not_applicable]
gpu_memory = "simulator lanes run on hosts without GPUs"
"""
SETTINGS = CollectorSettings(engine_period_s=0.1, memory_period_s=0.25, drain_timeout_s=3.0)


def frozen_matrix(folder: Path, extra: str = "") -> FrozenMatrix:
    path = folder / "matrix.toml"
    path.write_text(MATRIX.format(incumbent=free_port(), candidate=free_port(), extra=extra))
    return freeze(load_matrix(path))


def judged(frozen: FrozenMatrix, arm: str, folder: Path) -> tuple[Disposition, Reason, str]:
    lane = frozen.matrix.arm(arm).simulator
    assert lane is not None
    args = ["--served-model-name", "sim-tiny"]
    args += [a for k, v in lane.faults.items() for a in ("--fault", f"{k}={v}")]
    with running("tiny", args=args) as server:
        run_cell(CellRun(frozen, "needle-600-c1", arm, server, folder, SETTINGS))
    verdict = judge_cell(folder, frozen)
    return verdict.disposition, verdict.reason, verdict.sentence


@pytest.mark.parametrize("tolerance", ["", "needle_max_missed = 1.0"])
def test_a_planted_needle_miss_fails_the_cell_beyond_its_tolerance(
    tmp_path: Path, tolerance: str
) -> None:
    frozen = frozen_matrix(tmp_path, tolerance)
    clean = judged(frozen, "incumbent", tmp_path / "incumbent")
    assert clean[:2] == (Disposition.ACCEPTED, Reason.ACCEPTED), clean[2]
    missed = judged(frozen, "candidate", tmp_path / "candidate")
    if tolerance:  # every miss tolerated: the cell stands, the rule says how many missed
        assert missed[:2] == (Disposition.ACCEPTED, Reason.ACCEPTED), missed[2]
    else:
        assert missed[:2] == (Disposition.FAILED, Reason.NEEDLE_MISSED), missed[2]
        assert "3 of 3 scored needle requests missed the marker" in missed[2]


SEARCH_CELL = "needle-search-2000-c1"
SEARCH = (
    '[[cells]]\nid = "needle-600-c1"\n',
    f'[[cells]]\nid = "{SEARCH_CELL}"\nkind = "needle_search"\ndeadline_s = 120\n'
    "search = {{ low = 200, high = 2000, step = 200, budget = 6 }}\n"
    'sampling = {{ max_tokens = 48, reasoning_effort = "low" }}\n\n'
    '[[cells]]\nid = "needle-600-c1"\n',
)


def search_matrix(folder: Path) -> FrozenMatrix:
    """The needle rule's matrix with a needle_search cell before its needle cell."""
    text = MATRIX.replace(*SEARCH).format(incumbent=free_port(), candidate=free_port(), extra="")
    path = folder / "matrix.toml"
    path.write_text(text)
    return freeze(load_matrix(path))


def run_search(frozen: FrozenMatrix, arm: str, folder: Path) -> None:
    lane = frozen.matrix.arm(arm).simulator
    assert lane is not None
    args = ["--served-model-name", "sim-tiny"]
    args += [a for k, v in lane.faults.items() for a in ("--fault", f"{k}={v}")]
    with running("tiny", args=args) as server:
        run_cell(CellRun(frozen, SEARCH_CELL, arm, server, folder, SETTINGS))


def test_a_search_that_misses_beyond_its_edge_is_accepted_and_a_bad_journal_is_not(
    tmp_path: Path,
) -> None:
    frozen = search_matrix(tmp_path)
    for arm in ("incumbent", "candidate"):
        run_search(frozen, arm, tmp_path / arm)
    missing = judge_cell(tmp_path / "candidate", frozen)  # garbles beyond 300 tokens
    assert (missing.disposition, missing.reason) == (Disposition.ACCEPTED, Reason.ACCEPTED)
    # its probes are no decode or throughput samples: a marker may arrive in one chunk
    families = {f.name: f.presence.value for f in missing.families}
    assert {families[f] for f in ("decode_rate", "tpot", "aggregate_output_throughput")} == {
        "not_applicable"
    }
    rules = {r.code: r for r in missing.rules}
    assert rules[Reason.NEEDLE_MISSED].outcome is Outcome.NOT_APPLICABLE
    terminal = rules[Reason.REQUESTS_NOT_TERMINAL]
    assert terminal.outcome is Outcome.PASSED and 2 <= int(terminal.evidence["probes"]) <= 6
    assert rules[Reason.ERROR_RATE].evidence["scored"] == terminal.evidence["probes"]
    pair = judge_pair(tmp_path / "incumbent", tmp_path / "candidate")
    assert pair.outcome is Outcome.PASSED and "search the same range (200–2000" in pair.detail

    crashed = judge(with_record(load_cell(tmp_path / "candidate"), client_exit_code=1), frozen)
    assert crashed.reason is Reason.REQUESTS_NOT_TERMINAL, crashed.sentence
    assert "the client ended with exit 1 before the search was done" in crashed.sentence
    journal = tmp_path / "candidate" / JOURNAL_NAME
    first = journal.read_text().splitlines(keepends=True)[0]
    journal.write_text(journal.read_text() + first)  # a probe journaled twice
    doubled = judge_cell(tmp_path / "candidate", frozen)
    assert doubled.reason is Reason.REQUESTS_NOT_TERMINAL, doubled.sentence
    assert "two or more lines for probe 0" in doubled.sentence
