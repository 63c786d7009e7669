"""A whole campaign on two real vLLM engines, one engine flag apart, as process lanes.

faceoff starts each engine (vLLM's CPU build serving a tiny random-weight Llama),
reads its identity from the real boot log and /v1/models, sizes prompts through
the real /tokenize, scrapes the real /metrics, restores the incumbent with a
receipt, and seals a bundle that still audits clean while the restored engine
keeps running and logging.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff.formats.receipt import verify_receipt
from flows.prefect.flow_runner import run_campaign
from tests.e2e.matrices import LOADED_HOST, write_matrix
from tests.lanes.helpers import wait_for
from tests.vllm.engine import (
    MAX_MODEL_LEN,
    NO_JSON,
    NOT_APPLICABLE,
    SERVED,
    cell,
    vllm_arm,
)

pytestmark = [pytest.mark.vllm, pytest.mark.prefect]

ENGINE_FAMILIES = ("engine_prefill_time", "engine_queue_time", "kv_cache_usage", "kv_pool_tokens")


def ab_matrix(folder: Path, model: Path) -> Path:
    """Incumbent and candidate differ in one flag: the sequences the engine schedules."""
    data = {
        "schema_version": 1,
        "campaign": {"name": "vllm-ab", "seed": 7, "stop_policy": "continue"},
        "arms": [
            vllm_arm("inc", "incumbent", model, "--max-num-seqs", "8"),
            vllm_arm("cand", "candidate", model, "--max-num-seqs", "4"),
        ],
        "cells": [cell("natural-512-c1", concurrency=1), cell("natural-512-c2", concurrency=2)],
        "families": {"not_applicable": NOT_APPLICABLE},
        # a loaded CI host stalls a four-request cell past the stall guard (its own tests
        # judge it): this test is of the real engines' campaign and its sealed bundle
        "thresholds": LOADED_HOST,
    }
    return write_matrix(folder, data)


def test_two_real_engines_one_flag_apart_run_a_campaign_whose_bundle_stays_sealed(
    prefect_harness: None, tiny_model: Path, workdir: Path, tmp_path: Path
) -> None:
    result = run_campaign(ab_matrix(tmp_path, tiny_model), workdir)

    assert result.complete and result.restored, result.closure.sentence
    bundle = result.bundle
    for arm in ("inc", "cand"):
        check_identity(bundle, arm)
    for verdict_path in sorted(bundle.glob("cells/*/*/attempt-1/verdict.json")):
        check_verdict(json.loads(verdict_path.read_text()), verdict_path)
    for plan_path in sorted(bundle.glob("cells/*/*/attempt-1/requests.json")):
        check_sized_by_tokenize(json.loads(plan_path.read_text()), plan_path)
    receipt = verify_receipt(bundle / "receipt.json")
    assert receipt.outcome == "restored", receipt
    assert NO_JSON in json.dumps(receipt.model_dump(mode="json"))

    live_log = restored_boot_log(workdir / "vllm-ab")
    size_at_seal = live_log.stat().st_size
    ask(receipt_base_url(bundle))  # traffic after sealing: the engine logs it, and its stats
    wait_for(lambda: live_log.stat().st_size > size_at_seal, "the restored engine to log", 180)
    report = audit_bundle(bundle)
    assert report.ok, report


def check_identity(bundle: Path, arm: str) -> None:
    identity = json.loads((bundle / f"lanes/{arm}/campaign-001/identity.json").read_text())
    observed = identity["observed"]
    assert identity["verdict"]["ok"], identity["verdict"]
    assert observed["quantizations"] == ["None"]  # read from the engine's own boot line
    assert [m["id"] for m in observed["models"]] == [SERVED]
    assert observed["weights_sha256"]


def check_verdict(verdict: dict, where: Path) -> None:
    assert verdict["disposition"] == "accepted", (where, verdict["sentence"])
    present = {f["name"] for f in verdict["families"] if f["presence"] == "present"}
    required = {f["name"] for f in verdict["families"] if f["status"] == "required"}
    assert required <= present, (where, required - present)
    assert set(ENGINE_FAMILIES) <= present
    outcomes = {r["code"]: r["outcome"] for r in verdict["rules"]}
    assert outcomes["counter_mismatch"] == "passed", where


def check_sized_by_tokenize(plan: dict, where: Path) -> None:
    """Every prompt was fitted to its target through the engine's tokenizer."""
    assert plan["max_model_len"] == MAX_MODEL_LEN  # reported by the engine's /tokenize
    for request in plan["requests"]:
        actual = request["input_tokens"]
        assert abs(actual - request["target_input_tokens"]) <= 0.05 * 512, (where, actual)


def receipt_base_url(bundle: Path) -> str:
    lane = json.loads(next((bundle / "lanes/inc").glob("restore-*/lane.json")).read_text())
    return str(lane["base_url"])


def ask(base_url: str) -> None:
    """One chat completion from the restored incumbent, as production traffic would."""
    body = {"model": SERVED, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    request = urllib.request.Request(
        f"{base_url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        assert answer.status == 200


def restored_boot_log(campaign_dir: Path) -> Path:
    """The boot log the restored incumbent keeps writing, outside the sealed bundle."""
    logs = [p for p in campaign_dir.parent.rglob("boot.log") if "restore-" in str(p)]
    live = [p for p in logs if not p.is_relative_to(campaign_dir) or "live" in p.parts]
    assert live, f"no live boot log of the restored incumbent under {campaign_dir.parent}"
    return max(live, key=lambda p: p.stat().st_mtime)
