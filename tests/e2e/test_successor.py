"""A successor campaign (`successor_of`) reuses a closed campaign's accepted cells whose own
frozen content is unchanged: only its changed cell is measured, its bundle says which cells
were carried over from where and why the other ran, and `faceoff audit` verifies the copies
against the source bundle: a tampered copy, here or in the source, fails it."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from evidence.reviews.recording import ReviewRequest
from faceoff.exits import Exit
from faceoff.formats.attempt.cell_record import CellRecord
from faceoff.formats.bundle.reviews import Decision
from faceoff.formats.carried import CarriedRecord
from flows.cli.review import record_review
from flows.prefect.flow import campaign
from ledger.campaigns import require_campaign
from ledger.cells import latest_attempts
from ledger.db import open_ledger, session_scope
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix
from tests.foundation.cli import faceoff
from tests.foundation.output_schemas import shaped

pytestmark = pytest.mark.prefect

KEPT, CHANGED = "natural-600-c1", "natural-600-c2"
ARMS = ("inc", "cand")
TRIES = 3  # runs of the source until the kept cell stands accepted on a stalling host


def standing(workdir: Path, name: str) -> dict[tuple[str, str], str]:
    """(cell, arm) -> the disposition of its latest attempt, from the ledger."""
    with session_scope(open_ledger(f"sqlite:///{workdir / 'faceoff.db'}")) as session:
        rows = latest_attempts(session, require_campaign(session, name))
        return {key: row.disposition for key, row in rows.items()}


def run_source(path: Path, workdir: Path) -> None:
    """The source campaign, with its kept cell accepted on both arms: a run the shared host
    stalled (blocked host_stall) is rerun through a reviewer's rerun_cells, as an operator
    would."""
    engine = open_ledger(f"sqlite:///{workdir / 'faceoff.db'}")
    for _ in range(TRIES):
        campaign(matrix=str(path), workdir=str(workdir), return_state=True)
        found = standing(workdir, "succ-a")
        again = [f"{KEPT}/{a}" for a in ARMS if found[(KEPT, a)] != "accepted"]
        if not again:
            return
        request = ReviewRequest("qa", Decision.RERUN_CELLS, "host stalled", tuple(again))
        record_review(engine, "succ-a", request, now=lambda: datetime.now(UTC))
    pytest.fail(f"{KEPT} was not accepted on both arms in {TRIES} runs: {found}")


def audit(folder: Path) -> dict[str, Any]:
    """`faceoff audit FOLDER --json`, each check by its id."""
    done = faceoff("audit", str(folder), "--json")
    shown = shaped("audit", done.stdout)
    assert done.returncode == (0 if shown["ok"] else Exit.FINDINGS), done.stderr
    return {c["id"]: c for c in shown["checks"]}


def test_a_successor_measures_only_its_changed_cell(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    arms = [arm("inc", "incumbent", warmups=0), arm("cand", "candidate", warmups=0)]
    run_source(write_matrix(tmp_path, matrix("succ-a", arms)), workdir)
    second = matrix("succ-b", arms)
    second["campaign"] |= {"successor_of": "succ-a", "prompt_namespace": "succ-a"}
    second["cells"][1]["requests"] = 6  # CHANGED differs; KEPT is as it was
    campaign(matrix=str(write_matrix(tmp_path, second)), workdir=str(workdir), return_state=True)

    source, bundle = workdir / "succ-a", workdir / "succ-b"
    record = CarriedRecord.read(bundle / "carried.json")
    assert [c.cell_id for c in record.cells] == [KEPT]
    runs = {r.arm: r.attempt for r in record.cells[0].runs}
    assert list(runs) == list(ARMS)
    (fresh,) = record.fresh
    assert fresh.cell_id == CHANGED and "cell.requests: 4 → 6" in fresh.reason, fresh.reason
    for name in ARMS:  # the kept cell was measured by succ-a, the changed one here
        kept_dir = f"cells/{KEPT}/{name}/attempt-{runs[name]}"
        kept = CellRecord.read(bundle / kept_dir / "cell.json")
        (ran_dir,) = (bundle / "cells" / CHANGED / name).iterdir()
        ran = CellRecord.read(ran_dir / "cell.json")
        assert (kept.campaign, ran.campaign) == ("succ-a", "succ-b")
        assert kept.lane_run and ran.lane_run and kept.lane_run != ran.lane_run
        assert f"{kept.lane_run}/lane.json" in record.files
        assert not any(f.startswith(ran.lane_run) for f in record.files)
        for copied in (f"{kept_dir}/journal.jsonl", f"{kept.lane_run}/lane.json"):
            assert (bundle / copied).read_bytes() == (source / copied).read_bytes()

    comparison = json.loads((bundle / "comparison.json").read_text(encoding="utf-8"))
    assert comparison["schema_version"] == 12
    assert comparison["carried"]["source"] == "succ-a"
    assert [c["cell_id"] for c in comparison["carried"]["cells"]] == [KEPT]
    card = (bundle / "RESULT.md").read_text(encoding="utf-8")
    assert f"1 of 2 cell(s) carried over from campaign succ-a (measured there, not here; see " \
           f"Carried over): {KEPT}." in card  # fmt: skip
    assert "## Carried over from succ-a" in card and f"- {CHANGED}: its frozen content" in card
    status = faceoff("status", "succ-b", "--workdir", str(workdir), "--json")
    (facts,) = shaped("status", status.stdout)["campaigns"]
    carried_runs = [
        r for r in facts["cell_runs"] if "carried over from succ-a" in (r["reason"] or "")
    ]
    assert sorted((r["cell_id"], r["arm"]) for r in carried_runs) == [(KEPT, "cand"), (KEPT, "inc")]
    assert all(r["disposition"] == "accepted" for r in carried_runs)

    checks = audit(bundle)
    assert all(c["result"] in ("ok", "warning", "not checked") for c in checks.values()), checks
    assert (checks["carried"]["result"], checks["carried"]["count"]) == ("ok", len(record.files))
    attempts = len(list(bundle.glob("cells/*/*/attempt-*/verdict.json")))
    assert checks["verdicts"]["count"] == attempts  # the carried ones under succ-a's matrix
    assert audit(source)["carried"]["result"] == "not checked"
    journal = f"cells/{KEPT}/inc/attempt-{runs['inc']}/journal.jsonl"
    tampered_copy_fails(bundle, tmp_path / "elsewhere", journal)
    tampered_source_fails(bundle, source, journal)


def tampered_copy_fails(bundle: Path, elsewhere: Path, journal: str) -> None:
    """A copy of the successor's bundle whose carried journal was edited."""
    copy = elsewhere / bundle.name
    shutil.copytree(bundle, copy)
    path = copy / journal
    path.write_text(path.read_text(encoding="utf-8").replace('"ok"', '"OK"', 1))
    checks = audit(copy)
    assert checks["carried"]["result"] == "failed"
    first = checks["carried"]["findings"][0]
    assert first["file"] == journal and "carried over as" in first["problem"], first


def tampered_source_fails(bundle: Path, source: Path, journal: str) -> None:
    """The source bundle's own file edited after the successor copied it."""
    path = source / journal
    path.write_text(path.read_text(encoding="utf-8") + "\n")
    checks = audit(bundle)
    failed = [c for c in checks.values() if c["result"] == "failed"]
    assert [c["id"] for c in failed] == ["carried"], failed
    (finding,) = failed[0]["findings"]
    assert finding["file"] == journal
    assert "the source bundle's copy" in finding["problem"], finding
