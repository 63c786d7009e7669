"""Taking over from the incumbent: refuse an unknown server, stop a known one, drain first."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import freeze
from faceoff.formats.handoff import HandoffRecord
from faceoff.formats.lane import LaneRecord
from flows.campaign.context import CampaignContext
from flows.campaign.restore import restore_tools
from flows.campaign.takeover import check_incumbent_port, take_over
from lanes.bringup import bring_up
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.lane_context import LaneContext, LanePurpose, live_run_dir, next_run_dir
from lanes.readiness import Waiting
from ledger.db import open_ledger, resolve_url
from matrix.arm import Arm
from matrix.model import Matrix
from simulator.launch import running
from tests.conftest import free_port
from tests.lanes.helpers import gone, kill_recorded_processes, now
from tests.lanes.router_proxy import RouterProxy

TOKEN_ENV = "FACEOFF_HANDOFF_TOKEN"


SIM = {"lane": "simulator", "served_model": "sim-tiny", "simulator": {"profile": "tiny"}}
CORPUS = Path(__file__).resolve().parents[3] / "matrix/examples/data/fidelity-corpus.txt"


def context_for(
    workdir: Path, name: str, port: int, *, reference: bool = False, **incumbent: Any
) -> CampaignContext:
    """A two-arm campaign; ``reference``: with a reference arm and a fidelity cell."""
    arms = [
        SIM | {"name": "inc", "role": "incumbent", "port": port} | incumbent,
        SIM | {"name": "cand", "role": "candidate", "port": free_port()},
    ]
    corpus = {"file": str(CORPUS), "sha256": hashlib.sha256(CORPUS.read_bytes()).hexdigest()}
    fidelity = {"id": "f1", "corpus": corpus, "input_tokens": 64, "windows": 2, "greedy_prompts": 0}
    frozen = freeze(
        Matrix.model_validate(
            {
                "campaign": {"name": name, "seed": 1},
                "arms": [*arms, SIM | {"name": "ref", "role": "reference", "port": free_port()}]
                if reference
                else arms,
                "cells": [{"id": "c1", "kind": "natural", "input_tokens": 100,
                           "concurrency": 1, "requests": 1}],
                "fidelity": [fidelity] if reference else [],
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


def started_lane(
    context: CampaignContext, arm: Arm, purpose: LanePurpose
) -> tuple[LaneContext, int]:
    """The arm's lane of ``context``'s campaign brought up for ``purpose``, as a run left it."""
    ctx = LaneContext(
        campaign=context.name,
        matrix_id=context.frozen.matrix_id,
        purpose=purpose,
        run_dir=next_run_dir(context.campaign_dir, arm.name, purpose),
        environ=os.environ,
        now=now,
    )
    up = bring_up(open_lane(arm, ctx), UrllibHttp(), Waiting(now=now))
    assert up.ok, up.reason
    assert up.lane.record.pid is not None
    return ctx, up.lane.record.pid


def test_the_incumbent_an_earlier_campaign_restored_is_stopped_and_recorded(
    workdir: Path,
) -> None:
    port = free_port()
    earlier = context_for(workdir, "handoff-earlier", port)
    ctx, pid = started_lane(earlier, earlier.frozen.matrix.incumbent, LanePurpose.RESTORE)

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


def test_a_reference_lane_left_running_by_a_killed_run_is_stopped_by_the_takeover(
    workdir: Path,
) -> None:
    context = context_for(workdir, "handoff-d", free_port(), reference=True)
    _, pid = started_lane(context, context.frozen.matrix.arm("ref"), LanePurpose.CAMPAIGN)

    record = take_over(context)  # the run resumed after the kill

    assert gone(pid)
    assert [(s.arm, s.purpose, s.kind, s.ident) for s in record.stopped] == [
        ("ref", "campaign", "process", str(pid))
    ]
