"""``faceoff tickets``: the open tickets of every campaign in a workdir, as text and JSON."""

from __future__ import annotations

from pathlib import Path

from tests.foundation.cli import faceoff
from tests.foundation.output_schemas import shaped
from tests.tickets.test_cluster import RUNS, T0
from tickets.cluster import cluster
from tickets.store import write_tickets


def test_faceoff_tickets_lists_the_open_ones(tmp_path: Path) -> None:
    write_tickets(tmp_path / "a", "a", cluster(RUNS, campaign="a", matrix_id="m", now=T0))
    write_tickets(tmp_path / "b", "b", cluster(RUNS[3:], campaign="b", matrix_id="m", now=T0))
    write_tickets(tmp_path / "b", "b", [])
    done = faceoff("tickets", "--workdir", str(tmp_path), columns=250)
    assert done.returncode == 0, done.stderr
    assert "open tickets (3)" in done.stdout
    assert "a/tickets/a-failed-oom.md" in done.stdout
    assert "b/tickets/" not in done.stdout
    assert "controlled-10240-c1 contract_overrun" in done.stdout  # the reason, whole
    listed = shaped("tickets", faceoff("tickets", "--workdir", str(tmp_path), "--json").stdout)
    assert listed["schema_version"] == 1
    assert [t["path"] for t in listed["tickets"]] == [
        "a/tickets/a-blocked-stop-policy.md",
        "a/tickets/a-failed-contract-overrun.md",
        "a/tickets/a-failed-oom.md",
    ]
    oom = listed["tickets"][2]["ticket"]
    assert (oom["reason_code"], oom["cells"]) == ("oom", ["natural-8192-c4/nvfp4-r2"])
    assert "--cell natural-8192-c4/nvfp4-r2`" in oom["suggested_next_step"]
