"""`faceoff status` on a ledger several hosts share: this host's campaigns by default,
every host's with ``--all-hosts``; the real CLI on a real SQLite ledger."""

from __future__ import annotations

import json
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ledger.campaigns import open_campaign
from ledger.cells import set_campaign_state
from ledger.db import open_ledger, resolve_url, session_scope
from ledger.hosts import this_host
from ledger.tables import RestorationRow, ReviewRow
from tests.foundation.cli import faceoff

NIGHT = datetime(2026, 11, 30, 23, 30, tzinfo=UTC)
# name -> the host that opened it; None: opened before hosts were recorded
OPENED = {"before-hosts": None, "night-a": "gpu-a", "night-b": "gpu-b"}


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """Three campaigns; the two nights still running as the ledger says, each with a
    receipt path that is not on this machine, and night-a reviewed twice."""
    engine = open_ledger(resolve_url(None, tmp_path))
    with session_scope(engine) as session:
        for minutes, (name, host) in enumerate(OPENED.items()):
            row, _ = open_campaign(
                session, name=name, matrix_id=name[0] * 64, evidence_dir=tmp_path / name,
                now=lambda m=minutes: NIGHT + timedelta(minutes=m), host=host,
            )  # fmt: skip
            if host is None:
                continue
            set_campaign_state(session, row, status="running", now=lambda: NIGHT)
            assert row.id is not None
            session.add(RestorationRow(
                campaign_id=row.id, incumbent_arm="inc", state="restored", required_at=NIGHT,
                receipt_path=str(tmp_path / name / "receipt.json"),
            ))  # fmt: skip
            if name == "night-a":
                for hours, decision in ((2, "promote"), (1, "rerun_cells")):
                    session.add(ReviewRow(
                        campaign_id=row.id, reviewer="mira", decision=decision, note="n",
                        created_at=NIGHT + timedelta(hours=hours), record_sha256="f" * 64,
                    ))  # fmt: skip
    engine.dispose()
    return tmp_path


def shown(workdir: Path, host: str, *flags: str) -> dict[str, Any]:
    env = {"FACEOFF_HOST": host}
    done = faceoff("status", "--workdir", str(workdir), "--json", *flags, env=env)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_status_shows_this_hosts_campaigns_and_every_hosts_with_all_hosts(workdir: Path) -> None:
    own = shown(workdir, "gpu-a")
    assert (own["schema_version"], own["all_hosts"]) == (2, False)
    assert [(c["name"], c["host"]) for c in own["campaigns"]] == [
        ("before-hosts", None), ("night-a", "gpu-a"),
    ]  # fmt: skip
    every = shown(workdir, "gpu-a", "--all-hosts")
    assert every["all_hosts"] is True
    assert [(c["name"], c["host"]) for c in every["campaigns"]] == list(OPENED.items())
    assert [c["name"] for c in shown(workdir, "gpu-c")["campaigns"]] == ["before-hosts"]


def test_a_campaign_of_another_host_is_taken_at_the_ledgers_word(workdir: Path) -> None:
    """Its run lock and its receipt are on its own host's disk, not here."""
    every = {c["name"]: c for c in shown(workdir, "gpu-a", "--all-hosts")["campaigns"]}
    assert every["night-a"]["status"] == "interrupted"  # this host's: no live run holds it
    assert every["night-b"]["status"] == "running"
    assert every["night-a"]["receipt_valid"] is False  # its receipt belongs here, and is gone
    assert every["night-b"]["receipt_valid"] is None
    assert every["before-hosts"]["decision"] is None
    # the latest review, whatever order the rows were written in
    assert every["night-a"]["decision"]["decision"] == "promote"
    (named,) = shown(workdir, "gpu-b", "night-a")["campaigns"]
    assert named["decision"]["decision"] == "promote" and named["receipt_valid"] is None


def test_the_table_names_each_campaigns_host(workdir: Path) -> None:
    done = faceoff("status", "--workdir", str(workdir), "--all-hosts", env={"FACEOFF_HOST": "x"})
    assert done.returncode == 0, done.stderr
    assert "campaigns of every host" in done.stdout
    lines = [line for line in done.stdout.splitlines() if "night" in line]
    rows = {line.split("│")[1].strip(): line for line in lines}
    assert "gpu-a" in rows["night-a"] and "gpu-b" in rows["night-b"]
    own = faceoff("status", "--workdir", str(workdir), env={"FACEOFF_HOST": "gpu-b"})
    assert "campaigns on gpu-b" in own.stdout
    assert "night-b" in own.stdout and "night-a" not in own.stdout


def test_a_named_campaign_is_shown_whatever_its_host_and_all_hosts_is_refused_with_it(
    workdir: Path,
) -> None:
    one = faceoff("status", "night-b", "--workdir", str(workdir), env={"FACEOFF_HOST": "gpu-a"})
    assert one.returncode == 0, one.stderr
    assert "on gpu-b" in one.stdout
    both = faceoff("status", "night-b", "--all-hosts", "--workdir", str(workdir))
    assert both.returncode == 2
    assert both.stderr.startswith("error: --all-hosts: a named campaign is shown whatever its")
    assert "Traceback" not in both.stderr


def test_the_host_is_faceoff_host_else_the_machines_name() -> None:
    assert this_host({"FACEOFF_HOST": "gpu-a"}) == "gpu-a"
    assert this_host({}) == socket.gethostname() != ""
