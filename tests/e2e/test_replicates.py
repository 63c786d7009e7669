"""A replicated cell, end to end: passes alternate the arms, and the card says what the
between-replicate interval is."""

from __future__ import annotations

from pathlib import Path

import pytest

from faceoff.formats.attempt.request_plan import RequestPlan
from faceoff.formats.bundle.comparison import Comparison
from flows.prefect.flow_runner import run_campaign
from ledger.campaigns import cell_runs, require_campaign
from ledger.db import open_ledger, resolve_url, session_scope
from tests.e2e.host_load import not_accepted_but_for_the_host
from tests.e2e.matrices import arm, write_matrix
from tests.e2e.matrices import campaign as matrix

pytestmark = pytest.mark.prefect


def test_replicates_run_in_alternating_passes_and_get_a_between_replicate_interval(
    prefect_harness: None, workdir: Path, tmp_path: Path
) -> None:
    data = matrix("e2e-replicates", [arm("inc", "incumbent"), arm("cand", "candidate")])
    data["cells"] = [data["cells"][0] | {"id": "nat", "replicates": 2}]
    result = run_campaign(write_matrix(tmp_path, data), workdir)

    assert result.restored and not not_accepted_but_for_the_host(result.bundle)
    assert run_order(workdir) == [  # ABBA: the incumbent first in odd passes, last in even
        ("nat-r1", "inc"),
        ("nat-r1", "cand"),
        ("nat-r2", "cand"),
        ("nat-r2", "inc"),
    ]
    for name in ("inc", "cand"):  # each pass brought the arm's lane up afresh
        assert len(list((result.bundle / "lanes" / name).glob("campaign-*"))) == 2
    prompts = {
        tuple(r.prompt_sha256 for r in RequestPlan.read(p).requests)
        for p in result.bundle.glob("cells/nat-r*/*/attempt-1/requests.json")
    }
    assert len(prompts) == 1  # four runs, one prompt vector

    comparison = Comparison.read(result.bundle / "comparison.json")
    ttft = next(r for r in comparison.replicated if r.metric == "ttft_s")
    assert (ttft.cell, ttft.candidate, ttft.compared) == ("nat", "cand", ["nat-r1", "nat-r2"])
    assert ttft.low is not None and ttft.high is not None and ttft.low <= ttft.ratio <= ttft.high
    card = (result.bundle / "RESULT.md").read_text()
    assert "## Between replicates" in card
    assert f"{ttft.low:.2f}–{ttft.high:.2f}" in card


def run_order(workdir: Path) -> list[tuple[str, str]]:
    with session_scope(open_ledger(resolve_url(None, workdir))) as session:
        runs = cell_runs(session, require_campaign(session, "e2e-replicates"))
    return [(r.cell_id, r.arm) for r in sorted(runs, key=lambda r: r.started_at)]
