"""A matched reasoning-effort A/B: one cell, the same prompts, the effort a declared variant.

Two simulator lanes of the same recipe; the incumbent plans the cell with effort
``low``, the candidate retokenizes the same texts with ``max``. Both cells run for
real; pair integrity passes and lists the effort as differing by design, and the
same difference undeclared is a pair mismatch.
"""

from __future__ import annotations

from pathlib import Path

from collectors.settings import CollectorSettings
from faceoff.formats.attempt.journal import JOURNAL_NAME, Phase
from faceoff.formats.attempt.verdict import Outcome
from faceoff.formats.frozen_matrix import freeze
from faceoff.formats.reasons import Disposition
from flows.campaign.planning import PlanTarget, plan_cell
from guards.judge import judge_cell, judge_pair
from guards.pair import pair_integrity
from matrix.toml.reader import load_matrix
from simulator.launch import running
from tests.conftest import free_port
from tests.guards.cellrun import CellRun, run_cell
from workload.journal import read_journal

MATRIX = """
schema_version = 1
[campaign]
name = "effort-ab"
seed = 9

[[arms]]
name = "effort-low"
role = "incumbent"
lane = "simulator"
port = {low}
served_model = "sim-tiny"
[arms.simulator]
profile = "tiny"

[[arms]]
name = "effort-max"
role = "candidate"
lane = "simulator"
port = {high}
served_model = "sim-tiny"
[arms.simulator]
profile = "tiny"

[[cells]]
id = "natural-400-c1"
kind = "natural"
input_tokens = 400
concurrency = 1
requests = 3
deadline_s = 60
sampling = {{ max_tokens = 400 }}
variants = {{ reasoning_effort = {{ "effort-low" = "low", "effort-max" = "max" }} }}

[thresholds]
engine_period_s = 0.1
memory_period_s = 0.25
min_coverage = 0.2
max_consecutive_misses = 40
max_stalled_requests = 1.0
max_client_cpu_wait = 1.0

[families.not_applicable]
gpu_memory = "simulator lanes run on hosts without GPUs"
"""
SETTINGS = CollectorSettings(engine_period_s=0.1, memory_period_s=0.25, drain_timeout_s=3.0)


def reasoning_chars(folder: Path) -> list[int]:
    lines = read_journal(folder / JOURNAL_NAME).outcomes
    return [o.reasoning_chars for o in lines if o.phase is Phase.SCORED]


def test_an_effort_ab_runs_as_a_matched_pair_with_the_effort_by_design(tmp_path: Path) -> None:
    path = tmp_path / "matrix.toml"
    path.write_text(MATRIX.format(low=free_port(), high=free_port()))
    frozen = freeze(load_matrix(path))
    cell = frozen.matrix.cells[0]
    folders, plans = {}, {}
    for name in ("effort-low", "effort-max"):
        arm = frozen.matrix.arm(name)
        with running("tiny", args=["--served-model-name", "sim-tiny"]) as server:
            target = PlanTarget(arm, server.url, 9, "effort-ab")
            plans[name] = plan_cell(cell, target, reference=plans.get("effort-low"))
            folders[name] = tmp_path / name
            run_cell(CellRun(frozen, cell.id, name, server, folders[name], SETTINGS), plans[name])
        verdict = judge_cell(folders[name], frozen)
        assert verdict.disposition is Disposition.ACCEPTED, verdict.sentence

    assert {r.reasoning_effort for r in plans["effort-low"].requests} == {"low"}
    assert {r.reasoning_effort for r in plans["effort-max"].requests} == {"max"}
    pair = judge_pair(folders["effort-low"], folders["effort-max"])
    assert pair.outcome is Outcome.PASSED, pair.detail
    assert pair.evidence["by_design"] == ["reasoning_effort: 'low' vs 'max'"]
    assert "by design: reasoning_effort: 'low' vs 'max'" in pair.detail
    # the effort did change the answers: more reasoning at max, request by request
    low, high = reasoning_chars(folders["effort-low"]), reasoning_chars(folders["effort-max"])
    assert sum(high) > sum(low) > 0

    # The same difference without the declaration is what pair integrity refuses.
    undeclared = cell.model_copy(update={"variants": {}})
    plain = [p.model_copy(update={"cell": undeclared}) for p in plans.values()]
    refused = pair_integrity(*plain)
    assert refused.outcome is Outcome.FAILED
    assert "sampling differs undeclared: reasoning_effort: 'low' vs 'max' (first 0)" in (
        refused.detail
    )
