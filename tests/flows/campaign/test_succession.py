"""A successor whose source campaign the ledger does not know, or that is not closed yet, is
refused before anything is copied, and `faceoff run` refuses it before Prefect starts (the
carried-over run itself: tests/e2e/test_successor.py)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from faceoff.errors import FaceoffError
from faceoff.formats.frozen_matrix import freeze
from flows.campaign.context import CampaignContext
from flows.campaign.restore import restore_tools
from flows.campaign.succession import carry_over
from ledger.campaigns import open_campaign
from ledger.cells import set_campaign_state
from ledger.db import open_ledger, session_scope
from matrix.model import Matrix
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as e2e_matrix
from tests.foundation.cli import faceoff
from tests.matrix.test_cell_content import data


def now() -> datetime:
    return datetime.now(UTC)


def successor(workdir: Path) -> CampaignContext:
    frozen = freeze(Matrix.model_validate(data("new", successor_of="old")))
    engine = open_ledger(f"sqlite:///{workdir / 'faceoff.db'}")
    with session_scope(engine) as session:
        open_campaign(session, name="new", matrix_id=frozen.matrix_id,
                      evidence_dir=workdir / "new", now=now)  # fmt: skip
    tools = restore_tools(os.environ)
    return CampaignContext(frozen, workdir / "new", workdir, engine, tools, None)


def test_an_unknown_source_is_refused(tmp_path: Path) -> None:
    context = successor(tmp_path)
    with pytest.raises(FaceoffError, match="names campaign 'old', which the ledger does not know"):
        carry_over(context)
    assert not (tmp_path / "new").exists()


def test_a_source_still_open_is_refused(tmp_path: Path) -> None:
    context = successor(tmp_path)
    with session_scope(context.engine) as session:
        open_campaign(session, name="old", matrix_id="0" * 64, evidence_dir=tmp_path / "old",
                      now=now)  # fmt: skip
    with pytest.raises(FaceoffError, match="which is open, not closed") as raised:
        carry_over(context)
    assert raised.value.fix == "finish old first (faceoff run its matrix), then run this one"
    assert not (tmp_path / "new").exists()


def test_a_closed_source_whose_bundle_was_unsealed_is_refused_with_the_way_out(
    tmp_path: Path,
) -> None:
    context = successor(tmp_path)
    old = freeze(Matrix.model_validate(data("old")))
    old.write(tmp_path / "old" / "matrix.frozen.json")  # closed, then reopened by a restore
    with session_scope(context.engine) as session:
        row, _ = open_campaign(
            session, name="old", matrix_id=old.matrix_id, evidence_dir=tmp_path / "old", now=now
        )
        set_campaign_state(session, row, status="complete", now=now)
    with pytest.raises(FaceoffError, match="the bundle of old is not sealed") as raised:
        carry_over(context)
    assert "run old's matrix again with faceoff run" in (raised.value.fix or "")
    assert not (tmp_path / "new").exists()


def test_faceoff_run_refuses_an_unknown_source_before_prefect_starts(tmp_path: Path) -> None:
    workdir = tmp_path / "runs"
    with session_scope(open_ledger(f"sqlite:///{workdir / 'faceoff.db'}")) as session:
        open_campaign(session, name="other", matrix_id="0" * 64, evidence_dir=workdir / "other",
                      now=now)  # fmt: skip
    data = e2e_matrix("new", [arm("inc", "incumbent"), arm("cand", "candidate")])
    data["campaign"]["successor_of"] = "old"
    done = faceoff("run", str(write_matrix(tmp_path, data)), "--workdir", str(workdir))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) <= 2 and "Traceback" not in done.stdout + done.stderr, done.stderr
    assert lines[0].startswith(
        "error: campaign.successor_of: successor_of names campaign 'old', which the ledger "
        "does not know"
    ), lines
    assert not (workdir / "new").exists() and not (workdir / ".prefect").exists()
