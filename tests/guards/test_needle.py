"""The needle rule on real cell runs: a lane that garbles the marker fails the cell."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.settings import CollectorSettings
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from faceoff.formats.reasons import Disposition, Reason
from guards.judge import judge_cell
from matrix.toml.reader import load_matrix
from simulator.launch import running
from tests.conftest import free_port
from tests.guards.cellrun import CellRun, run_cell

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
