"""The preflight's power check: a rule criterion a counted cell cannot decide as planned is a
WARN naming the cell, the metric and the requests it needs; with those requests the same
cell is decidable and the check is ok. The ledger's closed campaigns are what it plans from
(a real SQLite ledger; a bundle that cannot be read leaves the conservative default)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evidence.comparison.power_table import PowerRow, PowerTable
from faceoff.formats.frozen_matrix import FrozenMatrix, freeze
from faceoff.formats.preflight import CheckStatus
from flows.campaign.preflight.ledger_check import ledger_check
from flows.campaign.preflight.power import judge_power, planned_table, power_checks
from ledger.campaigns import open_campaign
from ledger.cells import set_campaign_state
from ledger.db import open_ledger, session_scope
from matrix.rule import Rule
from matrix.toml.reader import load_matrix
from tests.conftest import free_port
from tests.e2e.matrices import write_matrix

SIM = {"lane": "simulator", "served_model": "sim-tiny", "simulator": {"profile": "tiny"}}
RULE = {"criteria": [{"metric": "ttft_s", "non_inferiority": 0.05}]}


def ruled(tmp: Path, requests: int, **cell: Any) -> FrozenMatrix:
    data = {
        "schema_version": 1,
        "campaign": {"name": f"tonight-{requests}", "seed": 1},
        "arms": [SIM | {"name": "inc", "role": "incumbent", "port": free_port()},
                 SIM | {"name": "cand", "role": "candidate", "port": free_port()}],
        "cells": [{"kind": "natural", "input_tokens": 600, "concurrency": 1,
                   "requests": requests, **cell}],
        "rule": RULE,
    }  # fmt: skip
    return freeze(load_matrix(write_matrix(tmp, data)))


def test_an_underpowered_cell_warns_with_the_requests_that_decide_it_and_those_pass(
    tmp_path: Path,
) -> None:
    found = judge_power(planned_table(ruled(tmp_path, 8), []))
    assert [(c.check, c.status, c.subject) for c in found] == [
        ("power", CheckStatus.WARN, "cell natural-600-c1")
    ]
    needed = planned_table(ruled(tmp_path, 8), []).rows[0].needed
    assert needed is not None and needed > 8
    assert found[0].finding.startswith("TTFT p50: 8 requests give ±")
    assert f"deciding a 5% margin needs ≈ {needed:,} requests" in found[0].finding
    assert found[0].fix is not None and f"requests = {needed:,}" in found[0].fix
    assert "faceoff run --aa" in found[0].fix  # planned with the default variance
    enough = judge_power(planned_table(ruled(tmp_path, needed), []))
    assert [(c.status, c.subject) for c in enough] == [(CheckStatus.OK, "the rule")]
    assert "decidable as planned in its 1 counted cell(s) (variances: default)" in (
        enough[0].finding
    )


def test_a_sequential_cell_is_told_its_requests_per_pass(tmp_path: Path) -> None:
    found = judge_power(planned_table(ruled(tmp_path, 8, replicates="auto", max_passes=3), []))
    assert [c.status for c in found] == [CheckStatus.WARN]
    assert "3 passes of 8 requests" in found[0].finding
    assert found[0].fix is not None and " per pass (or more max_passes)" in found[0].fix
    assert 'replicates = "auto"' not in found[0].fix  # it has them already


def test_a_p99_criterion_is_told_to_judge_a_lower_percentile_not_to_add_requests(
    tmp_path: Path,
) -> None:
    """No count of requests makes a p99 criterion decide: the fix never asks for millions."""
    frozen = ruled(tmp_path, 3, replicates="auto", max_passes=3)
    p99 = {"criteria": [{"metric": "ttft_s", "non_inferiority": 0.0, "statistic": "p99"}]}
    frozen = freeze(frozen.matrix.model_copy(update={"rule": Rule.model_validate(p99)}))
    (found,) = judge_power(planned_table(frozen, []))
    assert "a p99 criterion is shown, never decided" in found.finding
    assert found.fix is not None and found.fix.startswith("judge p95 or p50")
    assert "requests =" not in found.fix


def test_a_matrix_without_a_rule_has_nothing_to_plan(tmp_path: Path) -> None:
    frozen = ruled(tmp_path, 8)
    bare = freeze(frozen.matrix.model_copy(update={"rule": None}))
    assert power_checks(bare, [(Path("/nowhere"), datetime.now(UTC).date())]) == []


def test_the_ledger_gives_its_closed_campaigns_and_an_unreadable_bundle_leaves_the_default(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'faceoff.db'}"
    engine = open_ledger(url)
    night = datetime(2026, 12, 1, 1, 30, tzinfo=UTC)
    with session_scope(engine) as session:
        row, _ = open_campaign(
            session, name="last-night", matrix_id="a" * 64, evidence_dir=tmp_path / "gone",
            now=lambda: night,
        )  # fmt: skip
        set_campaign_state(session, row, status="complete", now=lambda: night)
    engine.dispose()
    frozen = ruled(tmp_path, 8)
    seen = ledger_check(url, frozen)
    assert seen.closed == [(tmp_path / "gone", night.date())]
    found = power_checks(frozen, seen.closed)
    assert [(c.check, c.status) for c in found] == [("power", CheckStatus.WARN)]
    assert "faceoff run --aa" in (found[0].fix or "")


def test_a_window_figure_below_its_calibrated_requests_warns_with_the_fix() -> None:
    """A figure with no variance to plan by (output throughput) still gets a line naming
    what makes it decide, and an energy figure of one window is told to replicate."""
    tps = PowerRow(cell="c", metric="output_tps", statistic="p50", test="non_inferiority",
                   bound=0.95, requests=8, passes=1, sequential=False, variance=None,
                   half_width=None, detectable=None, needed=29, tail_floor=None,
                   decidable=False, warning="c output throughput: too few")  # fmt: skip
    energy = tps.model_copy(update={"metric": "energy_per_token_j", "needed": None})
    found = judge_power(PowerTable(confidence=0.95, power=0.8, rows=[tps, energy], method=""))
    assert "requests = 29" in found[0].fix
    assert found[1].fix.startswith("replicate the cell")
