"""The shipped traffic example, run for real: dataset rows, a replayed trace, shared prefixes,
gamma arrivals and a ramp, each a matched pair on two simulator lanes.

Its bundle audits clean, and the audit rebuilds every sourced request from the rows the
plan holds (a row edited after the run, its hashes fixed, is found); a resume over a
changed dataset file is refused naming the file and both hashes.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from evidence.audit.reverify import audit_bundle
from evidence.folder.layout import CampaignFolder
from evidence.folder.sums import write_sums
from faceoff.canonical import file_sha256
from faceoff.errors import FaceoffError
from faceoff.formats.attempt.request_plan import DatasetSource, RequestPlan, TraceSource
from flows.prefect.flow_runner import run_campaign
from guards.judge import judge_pair
from tests.conftest import free_port
from tests.e2e.matrices import loaded_host_toml

pytestmark = pytest.mark.prefect

EXAMPLES = Path(__file__).resolve().parents[2] / "matrix/examples"
# The shared test host stalls; the stall and schedule-lag rules have their own tests (the lag
# bound as tests/evidence/attempt/test_open_loop.py sets it for campaigns on this host).
LOADED_HOST = loaded_host_toml(max_schedule_lag_ms=1000)
ARMS = ("tiny-base", "tiny-fast")
SOURCED = ("sharegpt-c4", "chat-gamma", "prompts-ramp", "azure-4x")
TAMPERED = "cells/sharegpt-c4/tiny-base/attempt-1"


def traffic_matrix(folder: Path) -> Path:
    """The example with free ports, beside a copy of its data (which the test may change)."""
    shutil.copytree(EXAMPLES / "data", folder / "data")
    text = re.sub(r"port = 181\d\d", lambda _: f"port = {free_port()}", EXAMPLES.joinpath(
        "sim-traffic.toml").read_text())  # fmt: skip
    path = folder / "sim-traffic.toml"
    path.write_text(text + LOADED_HOST)
    return path


def plan_of(bundle: Path, cell: str, arm: str) -> Path:
    return next((bundle / "cells" / cell / arm).glob("attempt-*/requests.json"))


def test_production_shaped_cells_run_as_matched_pairs_and_audit_from_their_rows(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    matrix = traffic_matrix(tmp_path)
    result = run_campaign(matrix, workdir)

    assert result.complete and result.restored, result.closure.sentence
    bundle = result.bundle
    for verdict in sorted(bundle.glob("cells/*/*/attempt-1/verdict.json")):
        data = json.loads(verdict.read_text())
        assert data["disposition"] == "accepted", (verdict, data["sentence"])
    for cell in (*SOURCED, "shared-prefix"):
        pair = judge_pair(*(plan_of(bundle, cell, arm).parent for arm in ARMS))
        assert pair.outcome.value == "passed", (cell, pair.detail)
    check_sources(bundle)
    report = audit_bundle(bundle)
    assert report.ok, report

    tamper_a_row(bundle)
    found = [f.file for f in audit_bundle(bundle).findings]
    assert f"{TAMPERED}/requests.json" in found and f"{TAMPERED}/verdict.json" in found, found

    changed = tmp_path / "data" / "chat-50.jsonl"
    before = file_sha256(changed)
    changed.write_text(changed.read_text().replace("Question 3.0", "Question 3.0 (edited)", 1))
    with pytest.raises(FaceoffError) as refused:
        run_campaign(matrix, workdir)
    message = refused.value.message
    assert str(changed) in message and before in message and file_sha256(changed) in message


def check_sources(bundle: Path) -> None:
    """Every sourced plan holds the row of each request, the same on both arms, and its
    verdict rebuilt every request from them (which the audit's fresh verdict repeats)."""
    for cell in SOURCED:
        plans = [RequestPlan.read(plan_of(bundle, cell, arm)) for arm in ARMS]
        source = plans[0].source
        assert source is not None and source == plans[1].source, cell
        assert len(source.rows) == len(plans[0].requests)
        for arm in ARMS:
            verdict = json.loads((plan_of(bundle, cell, arm).parent / "verdict.json").read_text())
            rows = next(r for r in verdict["rules"] if r["code"] == "rows_mismatch")
            assert rows["outcome"] == "passed", rows
            assert rows["evidence"]["requests"] == len(plans[0].requests) > 0
        if isinstance(source, TraceSource):
            assert source.reuse.ratio == 0  # an Azure trace shares no block
        else:
            assert isinstance(source, DatasetSource)
            assert all(r.prompt_tokens <= 2048 for r in source.rows)


def tamper_a_row(bundle: Path) -> None:
    """Edit one dataset row's text in a sealed bundle and rewrite SHA256SUMS to match."""
    path = bundle / TAMPERED / "requests.json"
    data = json.loads(path.read_text())
    turn = data["source"]["rows"][-1]["messages"][-1]
    turn["content"] = turn["content"].replace(" ", "  ", 1)
    path.write_text(json.dumps(data, indent=2) + "\n")
    write_sums(CampaignFolder(bundle))
