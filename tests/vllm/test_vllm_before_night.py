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

from evidence.audit.reverify import audit_bundle
from faceoff.formats.attempt.journal import Phase
from faceoff.formats.attempt.verdict import Verdict
from faceoff.formats.frozen_matrix import freeze
from faceoff.formats.passes import PASSES_FILE, PassRecord
from faceoff.formats.pilot import PILOT_DIR, PILOT_FILE, PilotRecord
from faceoff.formats.preflight import Waiver
from faceoff.formats.receipt import verify_receipt
from faceoff.keys import SIGNING_KEY_FILE_ENV, init_key_pair
from flows.campaign.preflight.host_checks import real_host, run_preflight
from flows.prefect.flow import campaign as campaign_flow
from flows.prefect.flow_runner import result_of
from ledger.campaigns import cell_runs, require_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from matrix.toml.reader import load_matrix
from tests.e2e.matrices import LOADED_HOST, write_matrix
from tests.foundation.cli import faceoff
from tests.vllm.engine import NOT_APPLICABLE, cell, vllm_arm
from workload.journal import read_journal

pytestmark = pytest.mark.vllm

LONG = "natural-8000-c1"
SHORT = "natural-512-c1"  # sequential: its passes are SHORT-r1 and SHORT-r2
PASS_1, PASS_2 = f"{SHORT}-r1", f"{SHORT}-r2"
ENGINE_ARGS = ["--dtype", "float32", "--enforce-eager"]  # no --max-model-len: config's limit


def long_cell_matrix(folder: Path, model: Path) -> Path:
    data: dict[str, Any] = {
        "schema_version": 1,
        "campaign": {"name": "vllm-pilot", "seed": 7, "stop_policy": "continue", "pilot": True},
        "arms": [
            vllm_arm("inc", "incumbent", model, engine_args=ENGINE_ARGS),
            vllm_arm("cand", "candidate", model, engine_args=[*ENGINE_ARGS, "--max-num-seqs", "4"]),
        ],
        "cells": [
            cell(SHORT, concurrency=1, replicates="auto", max_passes=2),
            cell(LONG, concurrency=1, input_tokens=8000),
        ],
        "rule": {"criteria": [{"metric": "ttft_s", "non_inferiority": 0.5}]},
        "families": {"not_applicable": NOT_APPLICABLE},
        "thresholds": LOADED_HOST,
    }
    return write_matrix(folder, data)


@pytest.mark.engine_untimed  # reads config.json: no engine is started
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
    prefect_harness: None,
    tiny_model: Path,
    workdir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    keys = init_key_pair(tmp_path / "keys")
    monkeypatch.setenv(SIGNING_KEY_FILE_ENV, str(keys.private))
    reason = "the operator knows; the pilot will block what the engine refuses"
    state = campaign_flow(
        matrix=str(long_cell_matrix(tmp_path, tiny_model)),
        workdir=str(workdir),
        waivers=[Waiver(check="context", reason=reason)],
        return_state=True,
    )
    result = result_of(state)

    assert result.restored, result.closure.sentence
    assert verify_receipt(result.bundle / "receipt.json").outcome == "restored"
    found = _dispositions(workdir)
    assert found[(PASS_1, "inc")] == found[(PASS_1, "cand")] == ("accepted", "accepted")
    assert found[(LONG, "inc")] == found[(LONG, "cand")] == ("blocked", "pilot_failed")
    assert (PASS_2, "inc") not in found and (PASS_2, "cand") not in found
    passes = PassRecord.read(result.bundle / PASSES_FILE)  # the blocked counted cell settled it
    assert [[w.arm for w in p.walks] for p in passes.passes] == [["inc", "cand"]]
    (skipped,) = passes.skipped
    assert (skipped.cells, skipped.reason) == ([PASS_2], "decided")
    assert "no decision (counted cell runs not accepted)" in skipped.sentence
    record = PilotRecord.read(result.bundle / PILOT_DIR / PILOT_FILE)
    assert sorted(lane.arm for lane in record.lanes) == ["cand", "inc"]  # once per arm
    lane_runs = {arm: sorted(p.name for p in (result.bundle / "lanes" / arm).iterdir())
                 for arm in ("inc", "cand")}  # fmt: skip
    assert lane_runs == {  # each lane up for the pilot, then once for the one pass
        "inc": ["campaign-001", "campaign-002", "restore-001"],
        "cand": ["campaign-001", "campaign-002"],
    }
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
        ("inc", PASS_1),
        ("cand", PASS_1),
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
    audited = faceoff("audit", str(result.bundle), "--trust", str(keys.public))
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert audited.stdout.rstrip().endswith("OK (signature verified)"), audited.stdout


def _dispositions(workdir: Path) -> dict[tuple[str, str], tuple[str, str | None]]:
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        runs = cell_runs(session, require_campaign(session, "vllm-pilot"))
    return {(r.cell_id, r.arm): (r.disposition, r.reason_code) for r in runs}
