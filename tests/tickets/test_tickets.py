"""Tickets: clusters by reason, Markdown front matter round trip, idempotent writes, closing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from faceoff.errors import FaceoffError
from faceoff.formats.ticket import parse, render
from faceoff.formats.ticket_index import INDEX_FILE, TicketIndex
from tests.foundation.cli import faceoff
from tests.foundation.output_schemas import shaped
from tickets.cluster import DEFAULT_STEP, BadRun, cluster, next_step, ticket_id
from tickets.store import open_tickets, read_tickets, write_tickets

T0 = datetime(2026, 10, 17, 13, 0, tzinfo=UTC)


def run(cell: str, arm: str, disposition: str = "failed", code: str = "contract_overrun") -> BadRun:
    return BadRun(cell, arm, disposition, code, f"{cell} {code}", (f"cells/{cell}/{arm}/x.json",))


RUNS = [
    run("controlled-10240-c1", "exl3-r11"),
    run("controlled-40960-c1", "exl3-r11", "blocked", "stop_policy"),
    run("controlled-10240-c1", "nvfp4-r2", "blocked", "stop_policy"),
    run("natural-8192-c4", "nvfp4-r2", "failed", "oom"),
]


def test_runs_with_the_same_disposition_and_reason_share_one_ticket() -> None:
    tickets = cluster(RUNS, campaign="glm53", matrix_id="m" * 64, now=T0)
    assert [t.id for t in tickets] == [
        "glm53-blocked-stop-policy",
        "glm53-failed-contract-overrun",
        "glm53-failed-oom",
    ]
    blocked = tickets[0]
    assert blocked.cells == ["controlled-40960-c1/exl3-r11", "controlled-10240-c1/nvfp4-r2"]
    assert blocked.evidence == sorted(p for r in RUNS[1:3] for p in r.evidence)
    assert "stop policy" in blocked.suggested_next_step
    assert blocked.suggested_next_step.endswith(
        "To rerun: `faceoff review glm53 --decision rerun_cells --note 'WHAT WAS FIXED' "
        "--cell controlled-40960-c1/exl3-r11 --cell controlled-10240-c1/nvfp4-r2`, then "
        "`faceoff run MATRIX` with the campaign's matrix (only those runs get a new attempt)."
    )
    assert next_step("never_heard_of") == DEFAULT_STEP
    assert ticket_id("c", "failed", "Counter Mismatch!") == "c-failed-counter-mismatch"


def test_a_cause_one_request_can_show_names_the_exact_diagnose_command_of_each_cell() -> None:
    runs = [*RUNS, run("controlled-40960-c1", "nvfp4-r2"), run("controlled-10240-c1", "x")]
    tickets = cluster(runs, campaign="glm53", matrix_id="m" * 64, now=T0)
    by_code = {t.reason_code: t for t in tickets}
    overrun = by_code["contract_overrun"].suggested_next_step
    assert (
        "To diagnose: `faceoff run --diagnose controlled-10240-c1 MATRIX`, "
        "`faceoff run --diagnose controlled-40960-c1 MATRIX` with the campaign's matrix"
    ) in overrun
    assert overrun.index("To diagnose:") < overrun.index("To rerun:")
    assert "--diagnose" not in by_code["stop_policy"].suggested_next_step
    assert "--diagnose" not in by_code["oom"].suggested_next_step


def test_front_matter_round_trips_and_reads_as_plain_key_values() -> None:
    (ticket,) = cluster(RUNS[:1], campaign="glm53", matrix_id="m" * 64, now=T0)
    text = render(ticket, "# body\n\ntext with: colons")
    assert text.startswith('---\nschema_version: 1\nid: "glm53-failed-contract-overrun"\n')
    assert 'cells:\n  - "controlled-10240-c1/exl3-r11"\n' in text
    parsed, body = parse(text, "t.md")
    assert parsed == ticket and body == "# body\n\ntext with: colons"


def test_a_malformed_ticket_is_an_error_naming_the_file() -> None:
    with pytest.raises(FaceoffError, match=r"t\.md: no front matter"):
        parse("# just markdown\n", "t.md")
    text = render(cluster(RUNS[:1], campaign="c", matrix_id="m", now=T0)[0], "b")
    with pytest.raises(FaceoffError, match=r"t\.md: front matter is not a valid ticket: status"):
        parse(text.replace('status: "open"', 'status: "maybe"'), "t.md")


def test_writing_is_idempotent_and_a_cluster_that_no_longer_fails_is_closed(tmp_path: Path) -> None:
    campaign = tmp_path / "glm53"
    first = cluster(RUNS, campaign="glm53", matrix_id="m", now=T0)
    write_tickets(campaign, "glm53", first)
    before = {p.name: p.read_text() for p in (campaign / "tickets").iterdir()}
    later = cluster(RUNS, campaign="glm53", matrix_id="m", now=T0 + timedelta(hours=1))
    write_tickets(campaign, "glm53", later)
    assert {p.name: p.read_text() for p in (campaign / "tickets").iterdir()} == before
    # the OOM cell was rerun and accepted: its ticket stays, closed
    write_tickets(campaign, "glm53", cluster(RUNS[:3], campaign="glm53", matrix_id="m", now=T0))
    states = {t.id: t.status for t, _ in read_tickets(campaign)}
    assert states["glm53-failed-oom"] == "closed"
    assert states["glm53-failed-contract-overrun"] == "open"
    index = TicketIndex.read(campaign / "tickets" / INDEX_FILE)
    assert [(e.id, e.status) for e in index.tickets] == sorted(states.items())


def test_open_tickets_are_listed_across_campaigns(tmp_path: Path) -> None:
    write_tickets(tmp_path / "a", "a", cluster(RUNS[:1], campaign="a", matrix_id="m", now=T0))
    write_tickets(tmp_path / "b", "b", cluster(RUNS[3:], campaign="b", matrix_id="m", now=T0))
    write_tickets(tmp_path / "b", "b", [])  # b's cluster was resolved
    (tmp_path / "faceoff.db").write_text("")  # not a campaign folder
    assert [t.id for t in open_tickets(tmp_path)] == ["a-failed-contract-overrun"]
    assert open_tickets(tmp_path / "missing") == []


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
