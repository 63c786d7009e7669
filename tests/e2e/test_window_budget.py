"""The night's window as a budget, end to end on the simulator: a sequential cell whose
criterion sits on its bound would run pass after pass; a short deadline stops the campaign
at the first pass that could not finish, and it closes in time with the rule's decision on
the evidence it has and a verified restoration receipt."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console

from evidence.audit.passes import passes_problems
from evidence.audit.reverify import audit_bundle
from evidence.comparison.build import CellEntries
from evidence.comparison.read import load_campaign
from evidence.folder.layout import CampaignFolder
from evidence.views.export import export_rows
from faceoff.formats.bundle.comparison import Comparison
from faceoff.formats.passes import PassRecord, SkippedCells
from faceoff.formats.preflight import Waiver
from faceoff.formats.receipt import verify_receipt
from flows.cli.views.console import LOG_WIDTH
from flows.cli.views.ending import end_summary
from flows.prefect.flow import campaign
from flows.prefect.flow_runner import result_of, run_campaign
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix

pytestmark = pytest.mark.prefect
BUDGET_S = 40  # a pass of this campaign takes 3–10 s on the shared test hosts: 20 never fit


def test_a_short_deadline_stops_the_passes_in_time_with_a_decision_and_a_receipt(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    deadline = datetime.now(UTC) + timedelta(seconds=BUDGET_S)
    data = matrix("e2e-window", [arm("inc", "incumbent"), arm("cand", "candidate")])
    data["campaign"]["deadline"] = deadline.isoformat()
    sequential = data["cells"][0] | {"id": "nat", "replicates": "auto", "max_passes": 20}
    data["cells"] = [sequential, data["cells"][1]]  # and natural-600-c2, counted, once
    # a p99 that a pass's few requests cannot claim: no pass gives a look, nothing decides
    # the criterion nor stops it for futility, so only the budget ends the passes
    # and a p50 on natural-600-c2's four requests: an interval too thin to decide, descriptive
    data["rule"] = {"criteria": [{"metric": "ttft_s", "non_inferiority": 0.0, "statistic": "p99",
                                  "cells": ["nat"]},
                                 {"metric": "tpot_s", "non_inferiority": 0.5,
                                  "cells": ["natural-600-c2"]}]}  # fmt: skip
    # the preflight's time check says the whole plan cannot fit: the test is what the passes
    # do about it
    short = Waiver(check="time", reason="the test's budget is short on purpose")
    path = write_matrix(tmp_path, data)
    state = campaign(matrix=str(path), workdir=str(workdir), waivers=[short], return_state=True)
    result = result_of(state)

    receipt = verify_receipt(result.bundle / "receipt.json")
    assert result.restored and receipt.completed_at <= deadline
    record = PassRecord.read(result.bundle / "passes.json")
    assert record.budget_end == deadline
    assert record.stop is not None and record.stop.startswith(
        f"pass {len(record.passes) + 1} not started"
    )
    assert f"before {deadline:%Y-%m-%d %H:%M:%S} UTC" in record.stop
    skipped = next(s for s in record.skipped if s.reason == "budget")
    assert f"nat-r{len(record.passes) + 1}" in skipped.cells

    comparison = Comparison.read(result.bundle / "comparison.json")
    assert comparison.ruling is not None and comparison.sequential is not None
    ruling = comparison.ruling.candidates[0]
    assert ruling.outcome in ("promote", "do_not_promote", "no_decision")
    nat = comparison.sequential.cells[0]
    assert nat.passes_run == [f"nat-r{k}" for k in range(1, len(record.passes) + 1)]
    assert nat.stopped.startswith("budget: pass")
    assert comparison.coverage.planned == 2 * (len(record.passes) + 1)  # untaken looks unplanned
    card = (result.bundle / "RESULT.md").read_text()
    assert card.split("\n\n")[1].startswith(
        f"Declared rule: **{ruling.outcome.replace('_', ' ')}**"
    )
    assert "## Sequential passes" in card and record.stop in card
    assert json.loads((result.bundle / "comparison.json").read_text())["schema_version"] == 12
    assert audit_bundle(result.bundle).ok
    console = Console(record=True, width=LOG_WIDTH)  # redirected: one line per fact
    console.print(end_summary(result))
    said = console.export_text().splitlines()
    assert said[1] == ruling.headline.replace("**", "")  # the run ends with the rule's outcome
    p99, p50 = ruling.criteria  # and each criterion's figure, the card's line
    assert said[2:4] == [f"- {p99.sentence}", f"- {p50.sentence}"]
    assert f"- {p50.sentence}" in card and "descriptive only" in p50.sentence
    assert f"{p50.cells[0].ratio:.2f}× (95% " in p50.sentence, p50.sentence
    exported = export_rows(comparison).criteria  # the same figures, for a notebook
    assert [(c.metric, c.status, c.ratio, c.sentence) for c in exported] == [
        (line.metric, line.status, line.cells[0].ratio if line.cells else None, line.sentence)
        for line in (p99, p50)
    ]


def test_the_audit_finds_a_pass_skipped_as_decided_that_the_evidence_left_undecided(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    data = matrix("e2e-undecided", [arm("inc", "incumbent"), arm("cand", "candidate")])
    data["cells"] = [data["cells"][0] | {"id": "nat", "replicates": "auto", "max_passes": 2}]
    # a p99 the cell's few requests cannot claim: no look, so undecided and never futile
    data["rule"] = {"criteria": [{"metric": "ttft_s", "non_inferiority": 0.0, "statistic": "p99"}]}
    result = run_campaign(write_matrix(tmp_path, data), workdir)
    inputs = load_campaign(CampaignFolder.at(result.bundle))
    assert inputs.passes is not None
    entries = [e for e in CellEntries(inputs) if e.id == "nat-r1"]
    claimed = SkippedCells(index=2, cells=["nat-r2"], reason="decided", sentence="decided")
    forged = inputs.passes.model_copy(update={"skipped": [claimed]})
    problems = passes_problems(forged, inputs.frozen.matrix, entries)
    assert problems == [("passes.json", "skipped[0]", "nat's pass 2 was skipped as decided, but "
                         "the passes before it leave it undecided: TTFT p99 for cand")]  # fmt: skip
