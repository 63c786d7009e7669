"""Taking over from the incumbent: refuse an unknown server, stop a known one, drain first."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import freeze
from faceoff.formats.lane import LaneRecord
from flows.campaign.context import CampaignContext
from flows.campaign.restore import restore_tools
from flows.campaign.takeover import HandoffRecord, check_incumbent_port, take_over
from lanes.bringup import bring_up
from lanes.context import LaneContext, LanePurpose, live_run_dir, next_run_dir
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.readiness import Waiting
from ledger.db import open_ledger, resolve_url
from matrix.model import Matrix
from simulator.launch import running
from tests.conftest import free_port
from tests.lanes.helpers import gone, kill_recorded_processes, now
from tests.lanes.router_proxy import RouterProxy

TOKEN_ENV = "FACEOFF_HANDOFF_TOKEN"


def context_for(workdir: Path, name: str, port: int, **incumbent: Any) -> CampaignContext:
    sim = {"lane": "simulator", "served_model": "sim-tiny", "simulator": {"profile": "tiny"}}
    frozen = freeze(
        Matrix.model_validate(
            {
                "campaign": {"name": name, "seed": 1},
                "arms": [
                    sim | {"name": "inc", "role": "incumbent", "port": port} | incumbent,
                    sim | {"name": "cand", "role": "candidate", "port": free_port()},
                ],
                "cells": [{"id": "c1", "kind": "natural", "input_tokens": 100,
                           "concurrency": 1, "requests": 1}],
            }
        )
    )  # fmt: skip
    engine = open_ledger(resolve_url(None, workdir))
    tools = restore_tools(os.environ)
    return CampaignContext(frozen, workdir / name, workdir, engine, tools, None)


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path
    for campaign_dir in tmp_path.glob("*/"):
        kill_recorded_processes(campaign_dir)


def test_an_unknown_server_on_the_incumbents_port_is_refused(workdir: Path) -> None:
    with running("tiny", time_scale=10.0) as stranger:
        context = context_for(workdir, "handoff-a", stranger.port)
        with pytest.raises(FaceoffError, match=f"127.0.0.1:{stranger.port}") as err:
            check_incumbent_port(context)
    assert "no lane faceoff started" in err.value.message


def test_the_incumbent_an_earlier_campaign_restored_is_stopped_and_recorded(
    workdir: Path,
) -> None:
    port = free_port()
    earlier = context_for(workdir, "handoff-earlier", port)
    arm = earlier.frozen.matrix.incumbent
    ctx = LaneContext(
        campaign="handoff-earlier",
        matrix_id=earlier.frozen.matrix_id,
        purpose=LanePurpose.RESTORE,
        run_dir=next_run_dir(earlier.campaign_dir, arm.name, LanePurpose.RESTORE),
        environ=os.environ,
        now=now,
    )
    up = bring_up(open_lane(arm, ctx), UrllibHttp(), Waiting(now=now))
    assert up.ok, up.reason
    pid = up.lane.record.pid
    assert pid is not None

    context = context_for(workdir, "handoff-b", port)
    check_incumbent_port(context)  # known: faceoff restored it under this workdir
    record = take_over(context)

    assert gone(pid)
    assert [(s.campaign, s.purpose, s.kind, s.ident) for s in record.stopped] == [
        ("handoff-earlier", "restore", "process", str(pid))
    ]
    assert record.drain is None
    written = HandoffRecord.read(context.campaign_dir / "handoffs" / "handoff-001.json")
    assert written == record
    stopped = LaneRecord.read(live_run_dir(ctx.run_dir) / "lane.json")  # not in its bundle
    assert stopped.state == "stopped"


def test_a_router_that_refuses_the_drain_stops_the_takeover(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "not-the-token")
    router = RouterProxy(upstream="", token="the-token", port=free_port()).start()
    try:
        hook = {"url": router.url, "token_env": TOKEN_ENV, "drain_url": router.admin("drain")}
        context = context_for(workdir, "handoff-c", free_port(), router=hook)
        with pytest.raises(FaceoffError, match="refused to drain") as err:
            take_over(context)
    finally:
        router.stop()
    assert "HTTP 401" in err.value.message and not router.drained
