"""Before the night, end to end on simulator lanes: a preflight FAIL stops `faceoff run`
before anything is written, a waived one is recorded in MANIFEST.json and on the card, and
the pilot finds what the engine breaks before the first scored request.

The field report this product is built from lost 18 of 42 cell runs to a controlled-output
contract both recipes overran; here the simulator overruns it on both arms and the pilot
blocks those cells before the scored hours, while the natural cells run.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff.errors import FaceoffError
from faceoff.exits import Exit
from faceoff.formats.attempt.journal import Phase
from faceoff.formats.attempt.verdict import Verdict
from faceoff.formats.bundle.manifest import Manifest
from faceoff.formats.pilot import PILOT_DIR, PILOT_FILE, PilotRecord
from faceoff.formats.preflight import Waiver, read_reports
from flows.prefect.flow import campaign as campaign_flow
from flows.prefect.flow_runner import result_of
from ledger.campaigns import cell_runs, require_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.restoration import find_restoration
from tests.e2e.host_load import not_accepted_but_for_the_host
from tests.e2e.matrices import arm, campaign, write_matrix
from tests.foundation.cli import faceoff
from workload.journal import read_journal

pytestmark = pytest.mark.prefect

OVERRUN = {"faults": {"contract_overrun": True}}


def dispositions(workdir: Path, name: str) -> dict[tuple[str, str], tuple[str, str | None]]:
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        runs = cell_runs(session, require_campaign(session, name))
    return {(r.cell_id, r.arm): (r.disposition, r.reason_code) for r in runs}


def run_flow(path: Path, workdir: Path, **parameters: Any) -> Any:
    state = campaign_flow(matrix=str(path), workdir=str(workdir), return_state=True, **parameters)
    return result_of(state)


def test_a_preflight_fail_stops_faceoff_run_before_anything_is_written(
    workdir: Path, tmp_path: Path
) -> None:
    cand = arm("cand", "candidate", secrets={"HF_TOKEN": "E2E_UNSET_HF_TOKEN"})
    path = write_matrix(tmp_path, campaign("e2e-refused", [arm("inc", "incumbent"), cand]))
    result = faceoff("run", str(path), "--workdir", str(workdir))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "preflight failed, nothing was touched: secrets (arm cand)" in result.stderr
    assert "E2E_UNSET_HF_TOKEN (secret HF_TOKEN) not set" in result.stderr
    assert "--waive CHECK" in result.stderr and "Traceback" not in result.stderr
    assert not workdir.exists()  # no campaign, no ledger, no Prefect home


def test_a_waived_secrets_fail_still_stops_the_run_before_the_incumbent_is_touched(
    workdir: Path, tmp_path: Path
) -> None:
    """Was: with the secrets check waived, the run took over (the serving incumbent drained
    and stopped), then could not start the incumbent's lane for want of its secret: the
    incumbent stayed down and the run exited 2, not the documented 4."""
    inc = arm("inc", "incumbent", secrets={"HF_TOKEN": "E2E_UNSET_INC_TOKEN"})
    path = write_matrix(tmp_path, campaign("e2e-unset", [inc, arm("cand", "candidate")]))
    waived = ("--waive", "secrets", "--reason", "the token is exported by the wrapper")

    result = faceoff("run", str(path), "--workdir", str(workdir), *waived)

    assert result.returncode == Exit.REFUSED, result.stdout + result.stderr
    assert "E2E_UNSET_INC_TOKEN, which is not set" in result.stderr
    assert "the serving incumbent is untouched" in result.stderr
    assert "Traceback" not in result.stderr
    assert not workdir.exists()  # no take-over, no campaign, no Prefect server


def test_a_deployment_run_without_a_secret_stops_before_the_take_over(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    """The flow asks again before the take-over: a deployment runs it without `faceoff run`."""
    inc = arm("inc", "incumbent", secrets={"HF_TOKEN": "E2E_UNSET_INC_TOKEN"})
    path = write_matrix(tmp_path, campaign("e2e-unset-flow", [inc, arm("cand", "candidate")]))
    waiver = Waiver(check="secrets", reason="the token is exported by the wrapper")

    with pytest.raises(FaceoffError, match="the serving incumbent is untouched"):
        run_flow(path, workdir, waivers=[waiver])

    assert not (workdir / "e2e-unset-flow" / "handoffs").exists()
    engine = open_ledger(resolve_url(None, workdir))
    with session_scope(engine) as session:
        assert find_restoration(session, require_campaign(session, "e2e-unset-flow")) is None


def test_a_waived_fail_is_recorded_in_the_manifest_and_on_the_card(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    data = campaign("e2e-waived", [arm("inc", "incumbent"), arm("cand", "candidate")])
    soon = datetime.now(UTC) + timedelta(seconds=20)  # shorter than even the estimate
    data["campaign"]["deadline"] = soon.isoformat(timespec="seconds")
    path = write_matrix(tmp_path, data)
    reason = "a calibration run; nothing serves in this window"

    result = run_flow(path, workdir, waivers=[Waiver(check="time", reason=reason)])

    assert result.restored and not not_accepted_but_for_the_host(result.bundle)
    (report,) = read_reports(result.bundle)
    (waived,) = report.waived
    assert (waived.check, waived.waived) == ("time", reason)
    assert "even the estimate does not fit" in waived.finding
    manifest = Manifest.read(result.bundle / "MANIFEST.json")
    assert manifest.schema_version == 3
    assert [(w.check, w.reason) for w in manifest.waivers] == [("time", reason)]
    card = (result.bundle / "RESULT.md").read_text(encoding="utf-8")
    assert f"**The run went on despite waived preflight FAILs**: time (campaign): {reason}." in card
    assert "## Before the night" in card and "**FAIL, waived**" in card
    assert audit_bundle(result.bundle).ok


def overrun_matrix(tmp: Path, **extra: Any) -> Path:
    """Natural cells both arms serve, and a controlled contract both overrun."""
    arms = [arm("inc", "incumbent", simulator=OVERRUN), arm("cand", "candidate", simulator=OVERRUN)]
    data = campaign("e2e-pilot", arms)
    data["campaign"]["pilot"] = True
    controlled = {"kind": "controlled", "concurrency": 1, "requests": 2, "output_words": 8}
    controlled |= {"deadline_s": 60.0, "sampling": {"max_tokens": 48}}
    data["cells"] += [controlled | {"id": "controlled-600-c1", "input_tokens": 600},
                      controlled | {"id": "controlled-1200-c1", "input_tokens": 1200}]  # fmt: skip
    data["campaign"] |= extra
    return write_matrix(tmp, data)


def test_the_pilot_blocks_a_contract_both_arms_overrun_before_any_scored_request(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    result = run_flow(overrun_matrix(tmp_path), workdir)

    found = dispositions(workdir, "e2e-pilot")
    for cell in ("natural-600-c1", "natural-600-c2"):
        assert found[(cell, "inc")] == found[(cell, "cand")] == ("accepted", "accepted")
    for cell in ("controlled-600-c1", "controlled-1200-c1"):
        assert found[(cell, "inc")] == found[(cell, "cand")] == ("blocked", "pilot_failed")
        for side in ("inc", "cand"):
            attempt = result.bundle / "cells" / cell / side / "attempt-1"
            assert sorted(p.name for p in attempt.iterdir()) == ["verdict.json"]  # never run
            verdict = Verdict.read(attempt / "verdict.json")
            assert "overran its 8-word contract" in verdict.sentence
    record = PilotRecord.read(result.bundle / PILOT_DIR / PILOT_FILE)
    probes = {(p.arm, p.cell_id): p for p in record.probes}
    # one natural contract (its longest input), one controlled: the longest, then the shortest
    assert sorted(probes) == [
        ("cand", "controlled-1200-c1"), ("cand", "controlled-600-c1"), ("cand", "natural-600-c1"),
        ("inc", "controlled-1200-c1"), ("inc", "controlled-600-c1"), ("inc", "natural-600-c1"),
    ]  # fmt: skip
    assert probes[("inc", "natural-600-c1")].failure is None
    failed = probes[("cand", "controlled-1200-c1")]
    assert failed.status == "length_limit" and failed.finish_reason == "length"
    assert "finish length at 48 max_tokens" in (failed.failure or "")
    assert [p.arm for p in record.probes][:3] == ["cand"] * 3  # candidates first, inc last
    assert _pilot_ended_before_the_first_scored_request(result.bundle, record)
    # each arm's pilot lane was stopped before the scored walk, the incumbent's too; the two
    # cells left alternate which arm runs first, so the incumbent walks twice
    lanes = {
        a: sorted(p.name for p in (result.bundle / "lanes" / a).iterdir()) for a in ("inc", "cand")
    }
    assert lanes == {
        "inc": ["campaign-001", "campaign-002", "campaign-003", "restore-001"],
        "cand": ["campaign-001", "campaign-002"],
    }
    card = (result.bundle / "RESULT.md").read_text(encoding="utf-8")
    assert (
        "**Pilot**: the pilot sent 6 request(s) over 4 arm contract(s); controlled, 8-word "
        "contract failed on cand and inc (controlled-1200-c1: it overran" in card
    )
    assert "4 cell run(s) blocked pilot_failed before the scored cells" in card
    assert audit_bundle(result.bundle).ok


def _pilot_ended_before_the_first_scored_request(bundle: Path, record: PilotRecord) -> bool:
    ends = []
    for probe in record.probes:
        (line,) = read_journal(bundle / probe.folder / "journal.jsonl").outcomes
        assert line.phase is Phase.PILOT
        ends.append(line.wall_anchor_utc)
    scored = []
    for journal in bundle.glob("cells/*/*/attempt-*/journal.jsonl"):
        scored += [o.wall_anchor_utc for o in read_journal(journal).outcomes if o.scored]
    return bool(scored) and max(ends) < min(scored)


def test_a_strict_pilot_stops_the_campaign_and_restores_the_incumbent(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    result = run_flow(overrun_matrix(tmp_path, pilot="strict"), workdir)

    assert result.restored and not result.complete
    found = dispositions(workdir, "e2e-pilot")
    assert set(found.values()) == {("blocked", "pilot_failed"), ("blocked", "stop_policy")}
    assert found[("natural-600-c1", "inc")] == ("blocked", "stop_policy")
    assert not list(result.bundle.glob("cells/*/*/attempt-*/journal.jsonl"))  # nothing scored
    record = PilotRecord.read(result.bundle / PILOT_DIR / PILOT_FILE)
    assert record.stopped and "the strict pilot stopped the campaign" in record.sentence
    receipt = json.loads((result.bundle / "receipt.json").read_text(encoding="utf-8"))
    assert receipt["outcome"] == "restored"
    assert audit_bundle(result.bundle).ok


def test_a_length_the_candidate_refuses_blocks_only_that_length_on_every_arm(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    refuse = {"faults": {"refuse_above_tokens": 1000}}
    arms = [arm("inc", "incumbent"), arm("cand", "candidate", simulator=refuse)]
    data = campaign("e2e-lengths", arms)
    data["campaign"]["pilot"] = True
    short = data["cells"][0]
    data["cells"] = [short, short | {"id": "natural-1500-c1", "input_tokens": 1500}]
    result = run_flow(write_matrix(tmp_path, data), workdir)

    found = dispositions(workdir, "e2e-lengths")
    assert found[("natural-600-c1", "inc")] == ("accepted", "accepted")
    assert found[("natural-600-c1", "cand")] == ("accepted", "accepted")
    assert found[("natural-1500-c1", "cand")] == ("blocked", "pilot_failed")
    assert found[("natural-1500-c1", "inc")] == ("blocked", "pilot_failed")  # no pair could decide
    record = PilotRecord.read(result.bundle / PILOT_DIR / PILOT_FILE)
    (refused,) = record.failures
    assert refused.cell_id == "natural-1500-c1" and "refused" in (refused.failure or "")
    assert "maximum context length is 1000 tokens" in (refused.failure or "")
    incumbent = Verdict.read(result.bundle / "cells/natural-1500-c1/inc/attempt-1/verdict.json")
    assert "no candidate can run natural-1500-c1 (cand: natural-1500-c1: the engine refused" in (
        incumbent.sentence
    )
    assert audit_bundle(result.bundle).ok
