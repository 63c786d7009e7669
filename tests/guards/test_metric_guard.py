"""The guard side of a whole campaign, run for real against two simulator lanes.

The candidate lane drops ``request_prefill_time_seconds`` from /metrics. Every
cell runs with the real plan, client process and collectors (``cellrun``); the
guard judges each folder, the stop policy is consulted before each cell, and
the campaign closes. This is what the Prefect campaign flow does around the
guard, minus Prefect, the ledger and the lanes package.

A test of the whole guards package, kept beside the metric guard: the family the
candidate drops, and the cells it blocks, are what it mainly asserts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from collectors.settings import CollectorSettings
from faceoff.formats.attempt.verdict import VERDICT_FILE, Presence, Verdict
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from faceoff.formats.reasons import Disposition, Reason
from guards.dispositions import ClosureStatus, Ran, close_campaign, pair_view, stop_policy_block
from guards.judge import judge_cell, judge_pair, not_run
from matrix.campaign_plan import CellRunKey, plan
from matrix.toml.reader import load_matrix
from simulator.launch import SimServer, running
from tests.guards.cellrun import CellRun, run_cell

MATRIX = """
schema_version = 1
[campaign]
name = "guards-e2e"
seed = 11
stop_policy = "block_workload"

[[arms]]
name = "incumbent"
role = "incumbent"
lane = "simulator"
port = 18301
served_model = "sim-tiny"
[arms.simulator]
profile = "tiny"

[[arms]]
name = "candidate"
role = "candidate"
lane = "simulator"
port = 18302
served_model = "sim-tiny"
engine_args = ["--fault", 'missing_families=["request_prefill_time_seconds"]']
[arms.simulator]
profile = "tiny"

[defaults]
deadline_s = 60
[defaults.sampling]
max_tokens = 48
reasoning_effort = "low"

[[cells]]
id = "natural-256-c2"
kind = "natural"
input_tokens = 256
concurrency = 2
requests = 4
warmups = 1

[[cells]]
id = "controlled-256-c1"
kind = "controlled"
input_tokens = 256
concurrency = 1
requests = 2
output_words = 10

[thresholds]
engine_period_s = 0.1
memory_period_s = 0.25
min_coverage = 0.2          # generous: shared CPUs; the point here is the dropped family
max_consecutive_misses = 40
max_stalled_requests = 1.0  # the shared test host stalls; host_stall has its own tests
max_client_cpu_wait = 1.0

[families.not_applicable]
gpu_memory = "simulator lanes run on hosts without GPUs"
"""
SETTINGS = CollectorSettings(engine_period_s=0.1, memory_period_s=0.25, drain_timeout_s=3.0)


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> FrozenMatrix:
    path = tmp_path_factory.mktemp("matrix") / "matrix.toml"
    path.write_text(MATRIX)
    return freeze(load_matrix(path))


def lane(frozen: FrozenMatrix, arm: str) -> Iterator[SimServer]:
    spec = frozen.matrix.arm(arm)
    args = ["--served-model-name", spec.served_model, *spec.engine_args]
    with running("tiny", args=args) as server:
        yield server


def run_arm(frozen: FrozenMatrix, arm: str, campaign: Path, earlier: list[Ran]) -> None:
    """One arm's cells, as the flow runs them: stop policy, cell, verdict."""
    spec = frozen.matrix.arm(arm)
    for server in lane(frozen, arm):
        for cell in frozen.matrix.cells_for(spec):
            key = CellRunKey(cell.id, arm)
            folder = campaign / "cells" / cell.id / arm / "attempt-1"
            block = stop_policy_block(frozen.matrix.campaign.stop_policy, earlier, key, cell.kind)
            if block is not None:
                verdict = not_run(frozen, cell.id, arm, 1, block)
            else:
                run_cell(CellRun(frozen, cell.id, arm, server, folder, SETTINGS))
                verdict = judge_cell(folder, frozen)
            verdict.write(folder / VERDICT_FILE)
            earlier.append(Ran(key, cell.kind, verdict.disposition))


def test_a_lane_dropping_prefill_time_blocks_its_cells_and_closes_partial(
    frozen: FrozenMatrix, tmp_path: Path
) -> None:
    earlier: list[Ran] = []
    for arm in frozen.matrix.arm_order():
        run_arm(frozen, arm.name, tmp_path, earlier)

    verdicts = {
        (v.cell_id, v.arm): v
        for v in (Verdict.read(p) for p in sorted(tmp_path.rglob(VERDICT_FILE)))
    }
    for cell in ("natural-256-c2", "controlled-256-c1"):
        incumbent, candidate = verdicts[(cell, "incumbent")], verdicts[(cell, "candidate")]
        assert incumbent.disposition is Disposition.ACCEPTED, incumbent.sentence
        assert (candidate.disposition, candidate.reason) == (
            Disposition.BLOCKED,
            Reason.FAMILY_MISSING,
        ), candidate.sentence
        missing = [f.name for f in candidate.families if f.presence is Presence.MISSING]
        assert missing == ["engine_prefill_time"]
        assert "request_prefill_time_seconds is absent" in candidate.sentence

    planned = plan(frozen.matrix)
    states = {r.key: r.disposition for r in earlier}
    closure = close_campaign(planned.cell_runs, states)
    assert closure.status is ClosureStatus.CLOSED_PARTIAL
    assert (closure.accepted, closure.failed, closure.blocked, closure.pending) == (2, 0, 2, 0)

    integrity = {
        pair: judge_pair(
            tmp_path / "cells" / pair.cell_id / pair.incumbent / "attempt-1",
            tmp_path / "cells" / pair.cell_id / pair.candidate / "attempt-1",
        )
        for pair in planned.pairs
    }
    view = pair_view(planned.pairs, states, integrity)
    assert all(p.integrity is not None and not p.integrity.failed for p in view)
    assert [p.reason for p in view] == [Reason.ARM_NOT_ACCEPTED] * 2
