"""Real engines that fail: killed mid-cell, dead in its warmups, never ready.

One campaign: a simulator incumbent (cheap to start and restore) and three real
vLLM candidates, each failing its own way, none of it simulated:

- ``crashy`` dies in its warmups: vLLM's CPU build crashes on a seeded request
  whose prefill is split across engine steps (a 2K prompt, a 512-token budget);
- ``killed`` has its whole process group SIGKILLed while its cell is in flight;
- ``never-ready`` asks for a context longer than the model's positions, and
  vLLM refuses it at boot.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff.formats.attempt.verdict import Verdict
from faceoff.formats.preflight import Waiver
from faceoff.formats.receipt import verify_receipt
from flows.prefect.flow import campaign
from flows.prefect.flow_runner import result_of
from tests.e2e.host_load import by_the_host
from tests.e2e.matrices import LOADED_HOST, write_matrix
from tests.e2e.matrices import arm as simulator_arm
from tests.vllm.engine import NOT_APPLICABLE, cell, vllm_arm

# What happened to each engine, named: a crash, a kill, a refusal. Nothing here is timed, so
# it runs beside the parallel pass's other tests, not alone.
pytestmark = [pytest.mark.vllm, pytest.mark.prefect, pytest.mark.engine_untimed]

SEEDED_LONG = cell("seeded-2048-c1", concurrency=1, input_tokens=2048, arms=["crashy"])
SEEDED_LONG["sampling"] = SEEDED_LONG["sampling"] | {"seed": True}
IN_FLIGHT = cell("natural-512-c1", concurrency=1, requests=8, arms=["inc", "killed", "never-ready"])


def faults_matrix(folder: Path, model: Path) -> Path:
    data = {
        "schema_version": 1,
        "campaign": {"name": "vllm-faults", "seed": 5, "stop_policy": "continue"},
        "arms": [
            simulator_arm("inc", "incumbent", simulator={"time_scale": 5.0}),
            vllm_arm("crashy", "candidate", model, "--max-num-batched-tokens", "512"),
            vllm_arm("killed", "candidate", model),
            vllm_arm("never-ready", "candidate", model, startup_deadline_s=600.0),
        ],
        "cells": [SEEDED_LONG, IN_FLIGHT],
        "families": {"not_applicable": NOT_APPLICABLE},
        "thresholds": LOADED_HOST,  # the simulator incumbent shares a busy host
    }
    data["arms"][3]["engine_args"][1] = "100000"  # beyond the model's 8,192 positions
    return write_matrix(folder, data)


def test_real_engines_that_crash_die_or_never_start_are_named_for_what_happened(
    prefect_harness: None, tiny_model: Path, workdir: Path, tmp_path: Path
) -> None:
    killer = MidCellKiller(workdir / "vllm-faults", arm="killed", cell="natural-512-c1")
    killer.start()
    # The preflight's context check names never-ready's flag before the night; waived here,
    # what the engine itself does at boot is the test.
    boot = Waiver(check="context", reason="never-ready must meet vLLM's own refusal at boot")
    path = faults_matrix(tmp_path, tiny_model)
    result = result_of(
        campaign(matrix=str(path), workdir=str(workdir), waivers=[boot], return_state=True)
    )
    killer.join(timeout=5)

    assert killer.killed_pid is not None, "the killed arm's cell ended before it could be killed"
    assert result.restored and not result.complete
    verdicts = {(v["cell_id"], v["arm"]): v for v in read_verdicts(result.bundle)}
    served = verdicts["natural-512-c1", "inc"]  # the simulator beside the failing engines
    assert served["disposition"] == "accepted" or by_the_host(Verdict.model_validate(served))

    crashed = verdicts["seeded-2048-c1", "crashy"]
    assert (crashed["disposition"], crashed["reason"]) == ("blocked", "warmups_failed"), crashed
    assert "warmup" in crashed["sentence"]
    crash_exit = lane_record(result.bundle, "crashy")["exit"]
    assert crash_exit["signal"] != signal.SIGTERM and crash_exit["exit_code"] != 0, crash_exit

    killed = verdicts["natural-512-c1", "killed"]
    assert (killed["disposition"], killed["reason"]) == ("failed", "lane_exited"), killed
    killed_exit = lane_record(result.bundle, "killed")["exit"]
    assert killed_exit["signal"] == signal.SIGKILL and not killed_exit["oom_killed"], killed_exit
    assert journaled_indices(result.bundle, "natural-512-c1", "killed") == list(range(8))

    never = verdicts["natural-512-c1", "never-ready"]
    assert (never["disposition"], never["reason"]) == ("blocked", "lane_not_ready"), never
    assert never["sentence"].count("exited with status") == 1, never["sentence"]

    assert verify_receipt(result.bundle / "receipt.json").outcome == "restored"
    report = audit_bundle(result.bundle)
    assert report.ok, report


class MidCellKiller(threading.Thread):
    """SIGKILLs an arm's engine (its whole process group) once its cell journaled a request."""

    def __init__(self, campaign_dir: Path, *, arm: str, cell: str) -> None:
        super().__init__(daemon=True)
        self.journal = campaign_dir / "cells" / cell / arm / "attempt-1" / "journal.jsonl"
        self.lanes = campaign_dir
        self.arm = arm
        self.killed_pid: int | None = None
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.05):
            if self.journal.exists() and self.journal.read_text().count("\n") >= 1:
                self.killed_pid = self._kill()
                return

    def join(self, timeout: float | None = None) -> None:
        self.done.set()
        super().join(timeout)

    def _kill(self) -> int:
        pid = int(lane_record(self.lanes, self.arm, live=True)["pid"])
        os.killpg(pid, signal.SIGKILL)
        return pid


def lane_record(root: Path, arm: str, *, live: bool = False) -> dict[str, Any]:
    """The arm's campaign lane record (the newest one written under ``root``)."""
    records = [p for p in root.rglob("lane.json") if f"/{arm}/campaign-" in str(p)]
    assert records, f"no lane record of {arm} under {root}"
    record = json.loads(max(records, key=lambda p: p.stat().st_mtime).read_text())
    assert not live or record.get("pid"), record
    return record


def read_verdicts(bundle: Path) -> list[dict[str, Any]]:
    return [
        json.loads(p.read_text()) for p in sorted(bundle.glob("cells/*/*/attempt-*/verdict.json"))
    ]


def journaled_indices(bundle: Path, cell_id: str, arm: str) -> list[int]:
    journal = bundle / "cells" / cell_id / arm / "attempt-1" / "journal.jsonl"
    lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    return sorted(line["index"] for line in lines if line["phase"] == "scored")
