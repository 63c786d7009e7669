"""Tickets on disk: idempotent writes, a cluster that no longer fails closed, open tickets
listed across campaigns."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from faceoff.formats.ticket_index import INDEX_FILE, TicketIndex
from tests.tickets.test_cluster import RUNS, T0
from tickets.cluster import cluster
from tickets.store import open_tickets, read_tickets, write_tickets


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
