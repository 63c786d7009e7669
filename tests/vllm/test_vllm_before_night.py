"""Before the night on the real engine: the preflight reads the real model's config.json,
and the pilot finds a cell above the engine's context before any scored request.

The tiny Llama's config.json says max_position_embeddings = 8192; its arms here give no
--max-model-len, so the engine serves the model's own limit, which only config.json (and
the engine) know. A cell of 8,000 prompt tokens asking 256 more needs 8,256: vLLM 0.32 does
not refuse it, it shortens max_tokens to what the context has left, so the cell would
quietly measure shorter outputs than it declares. The pilot finds that before the scored
cells; the preflight's context check, reading config.json, says it during the day (waived
here, to show the pilot).
"""

from __future__ import annotations

import os
import re
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from evidence.attempt.pilot import PILOT_DIR, PILOT_FILE, PilotRecord
from evidence.audit.run import audit_bundle
from faceoff.formats.frozen_matrix import freeze
from faceoff.formats.preflight import Waiver
from faceoff.formats.verdict import Verdict
from flows.campaign.preflight.run import real_host, run_preflight
from flows.prefect.flow import campaign as campaign_flow
from flows.prefect.runner import result_of
from ledger.campaigns import cell_runs, require_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from matrix.toml.reader import load_matrix
from tests.e2e.matrices import LOADED_HOST, write_matrix
from tests.vllm.engine import NOT_APPLICABLE, cell, vllm_arm
from workload.journal import read_journal
from workload.records import Phase

pytestmark = pytest.mark.vllm

LONG = "natural-8000-c1"
SHORT = "natural-512-c1"
ENGINE_ARGS = ["--dtype", "float32", "--enforce-eager"]  # no --max-model-len: config's limit


def long_cell_matrix(folder: Path, model: Path) -> Path:
    data: dict[str, Any] = {
        "schema_version": 1,
        "campaign": {"name": "vllm-pilot", "seed": 7, "stop_policy": "continue", "pilot": True},
        "arms": [
            vllm_arm("inc", "incumbent", model, engine_args=ENGINE_ARGS),
            vllm_arm("cand", "candidate", model, engine_args=[*ENGINE_ARGS, "--max-num-seqs", "4"]),
        ],
        "cells": [cell(SHORT, concurrency=1), cell(LONG, concurrency=1, input_tokens=8000)],
        "families": {"not_applicable": NOT_APPLICABLE},
        "thresholds": LOADED_HOST,
    }
    return write_matrix(folder, data)


def test_the_context_check_reads_the_real_models_config_json(
    tiny_model: Path, tmp_path: Path
) -> None:
    frozen = freeze(load_matrix(long_cell_matrix(tmp_path, tiny_model)))
    host = real_host(tmp_path / "runs", os.environ, UTC, db=None)
    report = run_preflight(frozen, host, pilot=True)
    found = [c for c in report.checks if c.check == "context"]
    assert [(c.subject, c.status.value) for c in found] == [
        ("arm inc", "FAIL"),
        ("arm cand", "FAIL"),
    ]
    assert "(config.json max_position_embeddings = 8,192)" in found[0].finding
    assert f"{LONG} (8,256)" in found[0].finding and SHORT not in found[0].finding
    assert not (tmp_path / "runs").exists()


@pytest.mark.prefect
def test_the_pilot_finds_a_cell_above_the_engines_context_before_the_scored_cells(
    prefect_harness: None, tiny_model: Path, workdir: Path, tmp_path: Path
) -> None:
    reason = "the operator knows; the pilot will block what the engine refuses"
    state = campaign_flow(
        matrix=str(long_cell_matrix(tmp_path, tiny_model)),
        workdir=str(workdir),
        waivers=[Waiver(check="context", reason=reason)],
        return_state=True,
    )
    result = result_of(state)

    assert result.restored, result.closure.sentence
    found = _dispositions(workdir)
    assert found[(SHORT, "inc")] == found[(SHORT, "cand")] == ("accepted", "accepted")
    assert found[(LONG, "inc")] == found[(LONG, "cand")] == ("blocked", "pilot_failed")
    record = PilotRecord.read(result.bundle / PILOT_DIR / PILOT_FILE)
    refused = {p.arm: p for p in record.failures}
    assert sorted(refused) == ["cand", "inc"]
    assert all(p.cell_id == LONG for p in refused.values())
    said = refused["cand"].failure or ""  # vLLM 0.32 shortens max_tokens to the context left
    cut = re.fullmatch(
        r"the engine cut its output at (\d+) of the 256 max_tokens asked \((\d+) prompt tokens: "
        r"the engine's context ran out\)",
        said,
    )
    assert cut is not None, said
    assert int(cut[1]) + int(cut[2]) == 8192  # exactly what config.json's context left
    assert {(p.arm, p.cell_id) for p in record.probes if p.failure is None} == {
        ("inc", SHORT),
        ("cand", SHORT),
    }  # the shortest of the contract passed: only the long cell is blocked
    for arm in ("inc", "cand"):
        verdict = Verdict.read(result.bundle / "cells" / LONG / arm / "attempt-1" / "verdict.json")
        assert "the engine cut its output at" in verdict.sentence
    (probe,) = read_journal(result.bundle / refused["inc"].folder / "journal.jsonl").outcomes
    assert probe.phase is Phase.PILOT and probe.finish_reason == "length"
    scored = [
        o.wall_anchor_utc
        for j in result.bundle.glob("cells/*/*/attempt-*/journal.jsonl")
        for o in read_journal(j).outcomes
        if o.scored
    ]
    assert scored and probe.wall_anchor_utc < min(scored)  # found before the scored cells
    assert audit_bundle(result.bundle).ok


def _dispositions(workdir: Path) -> dict[tuple[str, str], tuple[str, str | None]]:
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        runs = cell_runs(session, require_campaign(session, "vllm-pilot"))
    return {(r.cell_id, r.arm): (r.disposition, r.reason_code) for r in runs}
