"""Speculative decoding in the simulator: acceptance follows the content, and the
``spec_decode`` counters come out as vLLM's do, read back through faceoff's collectors."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.settings import CollectorSettings
from collectors.speculation import spec_acceptance
from faceoff.formats.attempt.telemetry import TELEMETRY_FILE, TelemetrySummary
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from matrix.toml.reader import load_matrix
from simulator.costmodel import tokens_per_step
from simulator.launch import running
from simulator.profile import load_profile
from simulator.speculation import Acceptance, accepted_drafts, fresh_credits
from simulator.virtual import Job, closed_loop
from tests.guards.cellrun import CellRun, run_cell

NVFP4 = load_profile("nvfp4-r2")  # MTP, 3 draft tokens: 0.85 on structured text, 0.62 on prose
STRUCTURED, PROSE = NVFP4.speculative.acceptance_structured, NVFP4.speculative.acceptance_prose


def test_position_i_is_accepted_at_the_rate_to_the_power_i_plus_one() -> None:
    credits, steps = fresh_credits(3), 10_000
    accepted = [0, 0, 0]
    for _ in range(steps):
        for position in range(accepted_drafts(credits, PROSE)):
            accepted[position] += 1
    assert [a / steps for a in accepted] == pytest.approx([PROSE, PROSE**2, PROSE**3], abs=1e-3)


def test_a_reasoning_model_drafts_its_reasoning_as_prose_and_its_answer_by_kind() -> None:
    answer = Acceptance(reasoning_tokens=100, reasoning_rate=PROSE, answer_rate=STRUCTURED)
    assert (answer.at(0), answer.at(99), answer.at(100)) == (PROSE, PROSE, STRUCTURED)
    prose = closed_loop(NVFP4, [Job(1000, 300, text_kind="prose")], 1).timings[0]
    mixed = closed_loop(NVFP4, [Job(1000, 300, 150, "structured")], 1).timings[0]
    json = closed_loop(NVFP4, [Job(1000, 300, text_kind="structured")], 1).timings[0]
    assert prose.decode_rate < mixed.decode_rate < json.decode_rate
    expected = tokens_per_step(NVFP4.speculative, "structured") / tokens_per_step(
        NVFP4.speculative, "prose"
    )
    assert json.decode_rate / prose.decode_rate == pytest.approx(expected, rel=0.02)


MATRIX = """
schema_version = 1
[campaign]
name = "spec-decode"
seed = 5

[[arms]]
name = "mtp"
role = "incumbent"
lane = "simulator"
port = 18311
served_model = "GLM-5.3-Flash"
[arms.simulator]
profile = "nvfp4-r2"

[[arms]]
name = "other"
role = "candidate"
lane = "simulator"
port = 18312
served_model = "GLM-5.3-Flash"
[arms.simulator]
profile = "nvfp4-r2"

[defaults]
input_tokens = 1024
concurrency = 2
requests = 4
deadline_s = 120
[defaults.sampling]
max_tokens = 400
reasoning_effort = "low"

[[cells]]
id = "structured"
kind = "decode_structured"

[[cells]]
id = "prose"
kind = "decode_prose"
"""
SETTINGS = CollectorSettings(engine_period_s=0.1, memory_period_s=0.25, drain_timeout_s=3.0)


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> FrozenMatrix:
    path = tmp_path_factory.mktemp("matrix") / "matrix.toml"
    path.write_text(MATRIX)
    return freeze(load_matrix(path))


def test_structured_decode_shows_higher_acceptance_than_prose_on_the_mtp_profile(
    frozen: FrozenMatrix, tmp_path: Path
) -> None:
    args = ["--served-model-name", "GLM-5.3-Flash"]
    found = {}
    with running("nvfp4-r2", time_scale=50, args=args) as server:
        for cell in ("structured", "prose"):
            folder = tmp_path / cell
            run_cell(CellRun(frozen, cell, "mtp", server, folder, SETTINGS))
            telemetry = TelemetrySummary.read(folder / TELEMETRY_FILE)
            found[cell] = spec_acceptance(telemetry.engine.counters)
    structured, prose = found["structured"], found["prose"]
    assert structured is not None and prose is not None
    assert structured.exact and prose.exact
    for acceptance in (structured, prose):
        assert acceptance.draft_tokens == 3 * acceptance.drafts
        assert acceptance.accepted_tokens == pytest.approx(
            sum(acceptance.per_position) * acceptance.drafts
        )
        assert acceptance.per_position == sorted(acceptance.per_position, reverse=True)
    assert structured.acceptance_rate > prose.acceptance_rate + 0.1
    # prose is drafted at the profile's base rate throughout (its reasoning too)
    assert prose.per_position[0] == pytest.approx(PROSE, abs=0.03)
    assert prose.mean_acceptance_length == pytest.approx(
        tokens_per_step(NVFP4.speculative, "prose"), rel=0.03
    )
