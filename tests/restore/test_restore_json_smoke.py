"""An incumbent whose model cannot emit JSON: the JSON smoke declared off, with its reason,
and the receipt says it was not run instead of failing the restoration."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from faceoff.formats.receipt import verify_receipt
from flows.campaign.restore import require_restoration, restore_incumbent
from lanes.http import UrllibHttp
from lanes.restoration import RestoreTools
from lanes.router import RouterHook
from tests.lanes import helpers
from tests.lanes.helpers import now
from tests.lanes.router_proxy import RouterProxy
from tests.restore.campaign import TOKEN, TOKEN_ENV, matrix, open_test_campaign, router

REASON = "random-weight test model emits no JSON"


def no_docker() -> Any:
    pytest.fail("no arm is a docker lane; Docker must not be touched")


def test_a_json_smoke_declared_off_is_quoted_not_passed(workdir: Path, proxy: RouterProxy) -> None:
    off = {"json_smoke": False, "json_smoke_off_reason": REASON, "poll_interval_s": 0.2}
    incumbent = helpers.simulator_arm(
        name="inc", probes=off, router=router(proxy.url, proxy.admin_base)
    )
    candidate = helpers.simulator_arm(name="cand", role="candidate")
    proxy.upstream = f"http://127.0.0.1:{incumbent.port}"
    arms = [incumbent.model_dump(mode="json"), candidate.model_dump(mode="json")]
    frozen = matrix("json-off", arms, [])
    engine, campaign_dir = open_test_campaign(workdir, frozen)
    require_restoration(engine, campaign="json-off", frozen=frozen,
                        campaign_dir=campaign_dir, now=now)  # fmt: skip
    RouterHook(incumbent, {TOKEN_ENV: TOKEN}, UrllibHttp(), now).drain()
    tools = RestoreTools(
        environ={TOKEN_ENV: TOKEN, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        now=now, http=UrllibHttp(), docker=no_docker, python=helpers.SIM_PYTHON, grace_s=2,
    )  # fmt: skip

    outcome = restore_incumbent(engine, "json-off", tools)

    assert outcome.state == "restored", outcome.details
    receipt = verify_receipt(campaign_dir / "receipt.json")
    assert receipt.outcome == "restored" and receipt.problems == []
    assert receipt.json_smoke is None and receipt.json_smoke_off_reason == REASON
    assert receipt.smoke is not None and receipt.smoke.line == "lane smoke 2/2"
    assert receipt.router is not None and receipt.router.readmitted_after_identity
    assert receipt.router.json_smoke is None
    assert f"JSON smoke not run: {REASON}" in receipt.summary()
    assert not any("json smoke" in line for line in receipt.summary())
    assert not proxy.drained
