"""Restoration of a simulator (host-process) incumbent: receipt, ledger, idempotence."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import psutil
import pytest
from sqlmodel import select

from faceoff.formats.lane import LaneRecord
from faceoff.formats.receipt import Receipt, verify_receipt
from flows.campaign.restore import require_restoration, restore_incumbent, restore_pending
from lanes.bringup import bring_up
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.lane_context import LanePurpose, live_run_dir
from lanes.process import is_same_process
from lanes.readiness import Waiting
from lanes.restoration import RestoreTools
from lanes.router import RouterHook
from ledger.campaigns import require_campaign
from ledger.db import session_scope
from ledger.restoration import begin_attempt, find_restoration
from ledger.tables import LaneRunRow
from tests.lanes import helpers
from tests.lanes.helpers import context, gone, now
from tests.lanes.router_proxy import RouterProxy
from tests.restore.campaign import TOKEN, TOKEN_ENV, matrix, open_test_campaign, router


def no_docker() -> Any:
    pytest.fail("no arm is a docker lane; Docker must not be touched")


def tools() -> RestoreTools:
    environ = {TOKEN_ENV: TOKEN, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return RestoreTools(
        environ=environ,
        now=now,
        http=UrllibHttp(),
        docker=no_docker,
        python=helpers.SIM_PYTHON,
        grace_s=2,
    )


def protected_files(root: Path) -> dict[str, Path]:
    files = {name: root / "etc" / name for name in ("routes.yaml", "tokens.env", "llm.service")}
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{path.name} as the operator left it\n")
    return files


def assert_ledger_restored(engine: Any, receipt: Receipt) -> None:
    with session_scope(engine) as session:
        row = find_restoration(session, require_campaign(session, "proc-restore"))
        assert row is not None and (row.state, row.attempts) == ("restored", 1)
        assert row.receipt_sha256 == receipt.receipt_sha256 and "routes.yaml" in (row.reason or "")
        runs = session.exec(select(LaneRunRow).where(LaneRunRow.purpose == "restore")).all()
        assert [(r.arm, r.pid, r.identity_ok) for r in runs] == [("inc", receipt.pid, True)]


def test_the_incumbent_comes_back_once_with_a_receipt(workdir: Path, proxy: RouterProxy) -> None:
    files = protected_files(workdir)
    incumbent = helpers.simulator_arm(name="inc", router=router(proxy.url, proxy.admin_base))
    candidate = helpers.simulator_arm(name="cand", role="candidate", expected_quantization=None)
    proxy.upstream = f"http://127.0.0.1:{incumbent.port}"
    arms = [incumbent.model_dump(mode="json"), candidate.model_dump(mode="json")]
    frozen = matrix("proc-restore", arms, [str(p) for p in files.values()])
    engine, campaign_dir = open_test_campaign(workdir, frozen)

    first = require_restoration(engine, campaign="proc-restore", frozen=frozen,
                                campaign_dir=campaign_dir, now=now)  # fmt: skip
    before = (campaign_dir / "protected.before.json").read_bytes()
    again = require_restoration(engine, campaign="proc-restore", frozen=frozen,
                                campaign_dir=campaign_dir, now=now)  # fmt: skip
    assert (again.id, again.state) == (first.id, "required")
    assert (campaign_dir / "protected.before.json").read_bytes() == before

    # The campaign drains the router, runs the candidate, and someone edits operator files.
    RouterHook(incumbent, {TOKEN_ENV: TOKEN}, UrllibHttp(), now).drain()
    lane = open_lane(candidate, context(campaign_dir, candidate, campaign="proc-restore"),
                     python=helpers.SIM_PYTHON)  # fmt: skip
    assert bring_up(lane, UrllibHttp(), Waiting(now=now)).ok
    candidate_pid = lane.record.pid
    files["routes.yaml"].write_text("llm.primary -> candidate\n")
    files["tokens.env"].unlink()

    outcome = restore_incumbent(engine, "proc-restore", tools())
    lane.exit_status()  # reap the candidate, our child, which restoration stopped
    assert outcome.state == "restored_with_changes", outcome.details
    receipt = verify_receipt(campaign_dir / "receipt.json")
    assert receipt.lane_kind == "simulator" and receipt.container_id is None
    restored = LaneRecord.read(campaign_dir / receipt.lane_run / "lane.json")
    pid = receipt.pid
    assert pid is not None and pid == restored.pid
    assert is_same_process(pid, restored.pid_started_at)
    assert receipt.lane_run == "lanes/inc/restore-001"
    assert [c.absent for c in receipt.candidates] == [True] and gone(candidate_pid or 0)
    assert receipt.smoke is not None and receipt.smoke.line == "lane smoke 2/2"
    assert receipt.json_smoke is not None and receipt.json_smoke.line == "lane json smoke 2/2"
    assert receipt.router is not None and receipt.router.readmitted_after_identity
    assert not proxy.drained and proxy.last("readmit") >= receipt.identity_ready_at  # type: ignore[operator]
    lines = [s.line for s in (receipt.router.smoke, receipt.router.json_smoke) if s]
    assert lines == ["router smoke 2/2", "router json smoke 2/2"]
    changes = {Path(c.path).name: c.change for c in receipt.protected_files}
    assert changes == {
        "routes.yaml": "modified",
        "tokens.env": "deleted",
        "llm.service": "unchanged",
    }
    assert not receipt.protected_unchanged and len(receipt.problems) == 2

    assert_ledger_restored(engine, receipt)

    written = (campaign_dir / "receipt.json").read_bytes()
    second = restore_incumbent(engine, "proc-restore", tools())
    assert (second.state, second.changed) == ("already_restored", False)
    assert "nothing changed" in second.message
    assert (campaign_dir / "receipt.json").read_bytes() == written
    assert not (campaign_dir / "lanes" / "inc" / "restore-002").exists()
    assert is_same_process(pid, restored.pid_started_at)  # still serving
    [probed] = restore_pending(engine, tools())  # nothing pending: the last one is probed
    assert (probed.state, probed.changed) == ("already_restored", False)
    assert probed.details[0].endswith(f"answering (serves {incumbent.served_model})")


def test_a_failed_restoration_stays_open_and_is_retried(workdir: Path) -> None:
    incumbent = helpers.simulator_arm(name="inc", expected_quantization="modelopt_fp4")
    candidate = helpers.simulator_arm(name="cand", role="candidate")
    arms = [incumbent.model_dump(mode="json"), candidate.model_dump(mode="json")]
    frozen = matrix("proc-fail", arms, [])
    engine, campaign_dir = open_test_campaign(workdir, frozen)
    untouched = restore_incumbent(engine, "proc-fail", tools())
    assert (untouched.state, untouched.changed) == ("not_required", False)
    require_restoration(engine, campaign="proc-fail", frozen=frozen,
                        campaign_dir=campaign_dir, now=now)  # fmt: skip

    first = restore_incumbent(engine, "proc-fail", tools())
    assert first.state == "failed" and first.receipt is not None
    assert first.receipt.problems[0] == (
        "identity of arm 'inc' does not match: quantization: expected 'modelopt_fp4', "
        "the boot log says 'exl3'"
    )
    assert first.receipt.smoke is None  # probes wait for identity
    first_pid = first.receipt.pid

    [retry] = restore_pending(engine, tools())
    assert retry.state == "failed" and retry.receipt is not None and retry.receipt.attempt == 2
    assert gone(first_pid or 0)  # the earlier attempt's lane was removed before the retry
    assert verify_receipt(campaign_dir / "receipt.superseded-1.json").attempt == 1
    assert retry.receipt.lane_run == f"lanes/inc/{LanePurpose.RESTORE.value}-002"
    with session_scope(engine) as session:
        row = find_restoration(session, require_campaign(session, "proc-fail"))
        assert row is not None and (row.state, row.attempts) == ("failed", 2)


def test_an_attempt_killed_midway_is_resumed(workdir: Path) -> None:
    incumbent = helpers.simulator_arm(name="inc")
    candidate = helpers.simulator_arm(name="cand", role="candidate")
    arms = [incumbent.model_dump(mode="json"), candidate.model_dump(mode="json")]
    frozen = matrix("proc-resume", arms, [])
    engine, campaign_dir = open_test_campaign(workdir, frozen)
    require_restoration(engine, campaign="proc-resume", frozen=frozen,
                        campaign_dir=campaign_dir, now=now)  # fmt: skip
    # An attempt that got as far as starting the incumbent, then died with its process:
    # the row says "restoring" and the lane it started is still serving.
    with session_scope(engine) as session:
        row = find_restoration(session, require_campaign(session, "proc-resume"))
        assert row is not None
        begin_attempt(session, row)
    ctx = context(campaign_dir, incumbent, campaign="proc-resume", purpose=LanePurpose.RESTORE)
    orphan = open_lane(incumbent, ctx, python=helpers.SIM_PYTHON)
    assert bring_up(orphan, UrllibHttp(), Waiting(now=now)).ok

    outcome = restore_incumbent(engine, "proc-resume", tools())
    orphan.exit_status()  # reap: the resumed attempt replaced it
    assert outcome.state == "restored" and outcome.receipt is not None
    assert outcome.receipt.attempt == 2 and outcome.receipt.lane_run == "lanes/inc/restore-002"
    assert gone(orphan.record.pid or 0)
    assert LaneRecord.read(live_run_dir(ctx.run_dir) / "lane.json").state == "stopped"


def test_a_port_held_by_something_not_ours_is_refused_naming_it(workdir: Path) -> None:
    """Was: an engine no record named (a kill while the restore lane booted) held the
    incumbent's port; the restoration started the incumbent on top of it, which died with
    address-in-use, and said only that."""
    incumbent = helpers.simulator_arm(name="inc")
    candidate = helpers.simulator_arm(name="cand", role="candidate")
    arms = [incumbent.model_dump(mode="json"), candidate.model_dump(mode="json")]
    frozen = matrix("proc-held", arms, [])
    engine, campaign_dir = open_test_campaign(workdir, frozen)
    require_restoration(engine, campaign="proc-held", frozen=frozen,
                        campaign_dir=campaign_dir, now=now)  # fmt: skip
    with socket.socket() as foreign:
        foreign.bind(("127.0.0.1", incumbent.port))
        foreign.listen()
        outcome = restore_incumbent(engine, "proc-held", tools())

    assert outcome.state == "failed" and outcome.receipt is not None
    assert outcome.receipt.identity_reason == (
        f"the incumbent's port {incumbent.port} is held by pid {os.getpid()} "
        f"({' '.join(psutil.Process().cmdline())[:120]}), which no lane record of this "
        "campaign names; stop it, then run `faceoff restore`"
    )
    assert not list(campaign_dir.glob("lanes/inc/restore-*/lane.json"))  # nothing started
