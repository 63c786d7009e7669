"""The preflight's ledger check: its revision, a successor's source, earlier nights'
durations for the estimate. Real SQLite ledgers; a PostgreSQL URL on a closed port for one
that does not answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from flows.campaign.preflight.ledger_check import ledger_check
from flows.campaign.preflight.timing import cell_s, estimate
from ledger.campaigns import open_campaign
from ledger.cells import begin_attempt
from ledger.db import open_ledger, session_scope
from matrix.model import Matrix
from tests.conftest import free_port

SIM = {"lane": "simulator", "served_model": "sim-tiny", "simulator": {"profile": "tiny"}}


def frozen_matrix(**campaign: Any) -> FrozenMatrix:
    cell = {"kind": "natural", "input_tokens": 600, "concurrency": 1, "requests": 2}
    return freeze(
        Matrix.model_validate(
            {
                "campaign": {"name": "tonight", "seed": 1, **campaign},
                "arms": [SIM | {"name": "inc", "role": "incumbent", "port": free_port()},
                         SIM | {"name": "cand", "role": "candidate", "port": free_port()}],
                "cells": [cell | {"id": "natural-600-c1"}, cell | {"id": "natural-600-c2"}],
            }
        )
    )  # fmt: skip


def sqlite(tmp: Path) -> str:
    return f"sqlite:///{tmp / 'faceoff.db'}"


def test_a_ledger_that_does_not_exist_yet_is_made_by_the_run(tmp_path: Path) -> None:
    seen = ledger_check(sqlite(tmp_path), frozen_matrix())
    assert seen.check.status.value == "ok" and "the run creates it" in seen.check.finding
    assert not (tmp_path / "faceoff.db").exists()  # nothing made


def test_a_ledger_a_newer_faceoff_wrote_fails(tmp_path: Path) -> None:
    engine = open_ledger(sqlite(tmp_path))
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    seen = ledger_check(sqlite(tmp_path), frozen_matrix())
    assert seen.check.status.value == "FAIL"
    assert "revision 0099, newer than this faceoff's" in seen.check.finding
    assert seen.check.fix == "upgrade faceoff on this host"


def test_a_ledger_that_does_not_answer_fails_with_its_password_hidden() -> None:
    url = f"postgresql+psycopg://faceoff:s3cret@127.0.0.1:{free_port()}/ledger"
    seen = ledger_check(url, frozen_matrix())
    assert seen.check.status.value == "FAIL" and "does not answer" in seen.check.finding
    assert "s3cret" not in seen.check.subject and "***" in seen.check.subject


def test_a_successor_of_a_campaign_the_ledger_does_not_know_fails(tmp_path: Path) -> None:
    open_ledger(sqlite(tmp_path)).dispose()
    seen = ledger_check(sqlite(tmp_path), frozen_matrix(successor_of="last-week"))
    assert seen.check.status.value == "FAIL"
    assert "successor_of names campaign 'last-week', which the ledger does not know" in (
        seen.check.finding
    )


def test_earlier_nights_of_the_same_cells_give_the_estimate(tmp_path: Path) -> None:
    frozen = frozen_matrix()
    engine = open_ledger(sqlite(tmp_path))
    night = datetime(2026, 12, 1, 1, 30, tzinfo=UTC)
    with session_scope(engine) as session:
        row, _ = open_campaign(
            session, name="last-night", matrix_id="a" * 64, evidence_dir=tmp_path, now=lambda: night
        )
        for arm, seconds in (("inc", 600.0), ("cand", 900.0)):
            run = begin_attempt(
                session, row, cell_id="natural-600-c1", arm=arm, attempt=1, artifacts_dir="x",
                now=lambda: night,
            )  # fmt: skip
            run.disposition, run.ended_at = "accepted", night + timedelta(seconds=seconds)
    seen = ledger_check(sqlite(tmp_path), frozen)
    assert seen.durations == {
        ("natural-600-c1", "inc"): [600.0],
        ("natural-600-c1", "cand"): [900.0],
    }
    assert "earlier runs of 2 cell run(s) of this matrix" in seen.check.finding
    from_plan = estimate(frozen.matrix, {}, pilot=False)
    guessed = estimate(frozen.matrix, seen.durations, pilot=False)
    assert (guessed.from_history, guessed.cell_runs) == (2, 4)
    planned = sum(cell_s(frozen.matrix.arm(a), frozen.matrix.cells[0]) for a in ("inc", "cand"))
    assert guessed.total_s == pytest.approx(from_plan.total_s - planned + 600.0 + 900.0)
    assert "2 of 4 cell runs from earlier nights" in guessed.sentence
