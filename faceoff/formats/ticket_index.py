"""``tickets/index.json``: every follow-up ticket of a campaign, open or closed, by id (the
tickets themselves are ``tickets/<id>.md``, written by ``tickets.store``).

Format history of ``TicketIndex.schema_version``:
  1 — first release.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec

TICKETS_DIR = "tickets"
INDEX_FILE = "index.json"


class IndexEntry(Spec):
    id: str = Field(description="Ticket id.")
    status: Literal["open", "closed"] = Field(description="open or closed.")
    reason_code: str = Field(description="Reason code of the cluster.")
    cells: list[str] = Field(description="cell/arm runs in the cluster.")
    path: str = Field(description="Path of the ticket, relative to the campaign folder.")


class TicketIndex(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Ticket index format version.")
    campaign: str = Field(description="Campaign name.")
    tickets: list[IndexEntry] = Field(description="Every ticket of the campaign, by id.")
