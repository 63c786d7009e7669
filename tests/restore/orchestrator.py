"""A campaign orchestrator reduced to what happens before a crash; the test SIGKILLs it.

It opens the campaign in the SQLite ledger, writes "restoration required" (with the
protected-file hashes), drains the router, stops the operator's incumbent, brings a
candidate lane up by digest, then says so in ``--ready-file`` and waits to be killed.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import docker

from faceoff.formats.frozen_matrix import read_frozen
from faceoff.formats.lane import LANE_FILE
from flows.campaign.restore import lane_run_row, require_restoration
from lanes.bringup import bring_up
from lanes.factory import open_lane
from lanes.http import UrllibHttp
from lanes.lane_context import LaneContext, LanePurpose, next_run_dir
from lanes.readiness import Waiting
from lanes.router import RouterHook
from ledger.campaigns import open_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.restoration import add_lane_run


def now() -> datetime:
    return datetime.now(UTC)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--campaign", required=True)
    parser.add_argument("--incumbent-container", required=True)
    parser.add_argument("--ready-file", type=Path, required=True)
    args = parser.parse_args()
    campaign_dir = args.workdir / args.campaign
    frozen = read_frozen(campaign_dir / "matrix.frozen.json")
    engine = open_ledger(resolve_url(None, args.workdir))
    with session_scope(engine) as session:
        row, _ = open_campaign(session, name=args.campaign, matrix_id=frozen.matrix_id,
                               evidence_dir=campaign_dir, now=now)  # fmt: skip
    require_restoration(engine, campaign=args.campaign, frozen=frozen,
                        campaign_dir=campaign_dir, now=now)  # fmt: skip

    incumbent = frozen.matrix.incumbent
    RouterHook(incumbent, os.environ, UrllibHttp(), now).drain()
    client = docker.from_env()
    client.containers.get(args.incumbent_container).stop(timeout=5)

    candidate = frozen.matrix.candidates[0]
    ctx = LaneContext(
        campaign=args.campaign,
        matrix_id=frozen.matrix_id,
        purpose=LanePurpose.CAMPAIGN,
        run_dir=next_run_dir(campaign_dir, candidate.name, LanePurpose.CAMPAIGN),
        environ=os.environ,
        now=now,
    )
    lane = open_lane(candidate, ctx, docker_client=client)
    up = bring_up(lane, UrllibHttp(), Waiting(now=now))
    with session_scope(engine) as session:
        add_lane_run(session, lane_run_row(
            int(row.id or 0), lane.record, identity_ok=up.ok, identity_reason=up.reason,
            record_path=ctx.run_dir / LANE_FILE,
        ))  # fmt: skip
    args.ready_file.write_text("identity ok\n" if up.ok else f"{up.reason}\n")
    time.sleep(600)


if __name__ == "__main__":
    main()
