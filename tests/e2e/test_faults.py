"""Campaigns whose candidate lane misbehaves, judged end to end by the guard.

One drops ``vllm:request_prefill_time_seconds`` from /metrics: its cells must be
blocked for exactly that family and the campaign close partial. One crashes
after two requests: its first cell fails, and the stop policy blocks the next
cell of the same workload without running it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff.exits import Exit
from faceoff.formats.attempt.verdict import Presence, Verdict
from faceoff.formats.lane import LaneRecord
from flows.prefect.flow_runner import exit_status, run_campaign
from ledger.campaigns import cell_runs, require_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix

pytestmark = pytest.mark.prefect


def dispositions(workdir: Path, name: str) -> dict[tuple[str, str, int], tuple[str, str | None]]:
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        runs = cell_runs(session, require_campaign(session, name))
    return {(r.cell_id, r.arm, r.attempt): (r.disposition, r.reason_code) for r in runs}


def test_a_lane_without_the_prefill_histogram_is_blocked_for_that_family_only(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    faults = {"faults": {"missing_families": ["vllm:request_prefill_time_seconds"]}}
    arms = [arm("inc", "incumbent"), arm("cand", "candidate", simulator=faults)]
    path = write_matrix(tmp_path, matrix("e2e-family", arms))

    result = run_campaign(path, workdir)

    assert result.closure.sentence.startswith("closed partial: 2 accepted, 0 failed, 2 blocked, 0")
    assert exit_status(result) == Exit.PARTIAL and result.restored
    assert audit_bundle(result.bundle).ok
    assert dispositions(workdir, "e2e-family") == {
        ("natural-600-c1", "inc", 1): ("accepted", "accepted"),
        ("natural-600-c2", "inc", 1): ("accepted", "accepted"),
        ("natural-600-c1", "cand", 1): ("blocked", "family_missing"),
        ("natural-600-c2", "cand", 1): ("blocked", "family_missing"),
    }
    for cell in ("natural-600-c1", "natural-600-c2"):
        attempt = result.bundle / "cells" / cell / "cand" / "attempt-1"
        verdict = Verdict.read(attempt / "verdict.json")
        missing = [f.name for f in verdict.families if f.presence is Presence.MISSING and f.blocks]
        assert missing == ["engine_prefill_time"]
        assert "engine_prefill_time" in verdict.sentence


def test_a_crashing_lane_fails_its_cells_and_the_stop_policy_blocks_its_workload(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    crash = {"faults": {"crash_after_requests": 2}}
    arms = [arm("inc", "incumbent"), arm("cand", "candidate", warmups=0, simulator=crash)]
    data = matrix("e2e-crash", arms)
    data["campaign"]["stop_policy"] = "block_workload"
    probe = {"id": "probe-600-c1", "kind": "prefill_probe", "input_tokens": 600}
    data["cells"].append(probe | {"concurrency": 1, "requests": 4, "deadline_s": 60.0})
    path = write_matrix(tmp_path, data)

    result = run_campaign(path, workdir)

    found = dispositions(workdir, "e2e-crash")
    assert found[("natural-600-c1", "cand", 1)][0] == "failed"
    assert found[("natural-600-c2", "cand", 1)] == ("blocked", "stop_policy")
    assert found[("probe-600-c1", "cand", 1)][0] == "failed"  # another workload still runs
    # natural-600-c2 runs the candidate first (cells alternate arm order): the incumbent's
    # run of it comes after the failure, and the policy blocks it too
    assert found[("natural-600-c2", "inc", 1)] == ("blocked", "stop_policy")
    assert result.closure.sentence.startswith("closed partial: 2 accepted, 2 failed, 2 blocked")
    blocked = result.bundle / "cells" / "natural-600-c2" / "cand" / "attempt-1"
    assert sorted(p.name for p in blocked.iterdir()) == ["verdict.json"]  # never run
    assert "natural-600-c1/cand failed" in Verdict.read(blocked / "verdict.json").sentence
    # The crashed lane was replaced before the next cell that ran: a second lane run.
    lane_runs = sorted(p.name for p in (result.bundle / "lanes" / "cand").iterdir())
    assert lane_runs == ["campaign-001", "campaign-002"]
    assert result.restored and audit_bundle(result.bundle).ok


def test_stop_campaign_after_a_failure_blocks_the_rest_without_starting_their_lanes(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    overrun = {"faults": {"contract_overrun": True}}  # ignores "exactly N words"
    arms = [arm("inc", "incumbent", simulator=overrun), arm("cand", "candidate")]
    data = matrix("e2e-stop", arms)
    data["campaign"]["stop_policy"] = "stop_campaign"
    controlled = {"id": "controlled-600-c1", "kind": "controlled", "input_tokens": 600}
    controlled |= {"concurrency": 1, "requests": 2, "output_words": 8, "deadline_s": 60.0}
    data["cells"] = [controlled | {"sampling": {"max_tokens": 48}}, data["cells"][0]]
    path = write_matrix(tmp_path, data)

    result = run_campaign(path, workdir)

    assert dispositions(workdir, "e2e-stop") == {
        ("controlled-600-c1", "inc", 1): ("failed", "contract_overrun"),
        ("natural-600-c1", "inc", 1): ("blocked", "stop_policy"),
        ("controlled-600-c1", "cand", 1): ("blocked", "stop_policy"),
        ("natural-600-c1", "cand", 1): ("blocked", "stop_policy"),
    }
    assert result.closure.sentence.startswith("closed partial: 0 accepted, 1 failed, 3 blocked")
    assert not (result.bundle / "lanes" / "cand").exists()  # its lane was never started
    assert result.restored and audit_bundle(result.bundle).ok


def test_a_cell_that_cannot_be_planned_is_blocked_with_the_reason_in_its_verdict(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    arms = [arm("inc", "incumbent", warmups=0), arm("cand", "candidate", warmups=0)]
    data = matrix("e2e-setup", arms)
    data["cells"] = [data["cells"][0] | {"id": "natural-9000-c1", "input_tokens": 9000}]
    path = write_matrix(tmp_path, data)  # the tiny profile serves 8,192 tokens of context

    result = run_campaign(path, workdir)

    assert dispositions(workdir, "e2e-setup") == {
        ("natural-9000-c1", "inc", 1): ("blocked", "setup_failed"),
        ("natural-9000-c1", "cand", 1): ("blocked", "setup_failed"),
    }
    verdict = Verdict.read(result.bundle / "cells/natural-9000-c1/inc/attempt-1/verdict.json")
    assert "could not be set up" in verdict.sentence
    assert "8192" in verdict.sentence.replace(",", "")
    assert result.restored and audit_bundle(result.bundle).ok


def test_an_engine_that_dies_in_its_warmups_blocks_its_cells_and_keeps_its_own_exit(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    crash = {"faults": {"crash_after_requests": 1, "crash_exit_code": 7}}
    arms = [arm("inc", "incumbent"), arm("cand", "candidate", warmups=2, simulator=crash)]
    path = write_matrix(tmp_path, matrix("e2e-warmdeath", arms))

    result = run_campaign(path, workdir)

    found = dispositions(workdir, "e2e-warmdeath")
    for cell in ("natural-600-c1", "natural-600-c2"):
        assert found[(cell, "cand", 1)] == ("blocked", "warmups_failed")
        verdict = Verdict.read(
            result.bundle / "cells" / cell / "cand" / "attempt-1" / "verdict.json"
        )
        assert "1 of 2 warmup(s) errored; first: " in verdict.sentence
        assert "the lane had died: exited with status 7" in verdict.sentence
    # The dead lane was noticed before the second cell and started again: two lane runs,
    # each recording the engine's own exit, not the SIGTERM of the stop that followed.
    lanes = result.bundle / "lanes" / "cand"
    assert sorted(p.name for p in lanes.iterdir()) == ["campaign-001", "campaign-002"]
    for run in lanes.iterdir():
        ended = LaneRecord.read(run / "lane.json").exit
        assert ended is not None and ended.exit_code == 7, ended
        assert ended.detail.startswith("exited with status 7")
    assert result.restored and audit_bundle(result.bundle).ok
