"""``tickets/<id>.md`` and ``.history/drift/<id>.md``: a follow-up ticket of a campaign, or
the drift ticket of a change point the history found in an incumbent's nightly p50 (written
by ``tickets.drift``); Markdown with a front matter block, and its round trip (the index
beside a campaign's tickets: ``faceoff.formats.ticket_index``).

The front matter is YAML-ish and deliberately plain: one ``key: value`` per line,
every value a JSON scalar (so quoting is never ambiguous), lists as ``- item``
lines under their key. It reads as YAML and parses back without a YAML library.

Format history of ``Ticket.schema_version``:
  1 — first release.
Format history of ``DriftTicket.schema_version``:
  1 — first release.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, ValidationError

from faceoff.artifact import Spec, first_error
from faceoff.errors import FaceoffError

FENCE = "---"
LIST_FIELDS = ("cells", "evidence")
T = TypeVar("T", bound=Spec)
DRIFT_DIR = Path(".history") / "drift"


class Ticket(Spec):
    schema_version: Literal[1] = Field(default=1, description="Ticket format version.")
    id: str = Field(description="<campaign>-<reason code>: stable across bundle rebuilds.")
    campaign: str = Field(description="Campaign name.")
    matrix_id: str = Field(description="Frozen matrix id of the campaign.")
    status: Literal["open", "closed"] = Field(description="open until someone closes it.")
    disposition: Literal["failed", "blocked"] = Field(description="What the cluster's runs are.")
    reason_code: str = Field(description="The guard reason code the cluster shares.")
    reason: str = Field(description="The guard's sentence for the first run of the cluster.")
    cells: list[str] = Field(description="cell/arm runs in the cluster.")
    evidence: list[str] = Field(description="Bundle files that show it.")
    suggested_next_step: str = Field(description="What to do about it.")
    created_at: datetime = Field(description="When the ticket was written (UTC).")


class DriftTicket(Spec):
    schema_version: Literal[1] = Field(default=1, description="Drift ticket format version.")
    kind: Literal["drift"] = Field(default="drift", description="What the ticket follows up.")
    id: str = Field(description="drift-<host>-<arm>-<cell>-<metric>-<night>: stable.")
    status: Literal["open", "closed"] = Field(description="open until someone closes it.")
    host: str = Field(description="Host whose series moved.")
    arm: str = Field(description="The incumbent arm.")
    cell: str = Field(description="Cell id.")
    metric: str = Field(description="Headline request metric whose p50 moved.")
    night: date = Field(description="First night at the new level.")
    campaign: str = Field(description="Campaign of that night.")
    before: float = Field(description="Median nightly p50 before the change.")
    after: float = Field(description="Median nightly p50 from the change on.")
    relative: float = Field(description="after / before − 1.")
    evidence: list[str] = Field(description="Bundles of the nights on either side of it.")
    suggested_next_step: str = Field(description="What to do about it.")
    created_at: datetime = Field(description="When the ticket was first written (UTC).")


def render(ticket: Spec, body: str) -> str:
    """Front matter of any ticket model (a cell cluster's, a drift's), then the body."""
    lines = [FENCE]
    for key, value in ticket.model_dump(mode="json").items():
        if key in LIST_FIELDS:
            lines.append(f"{key}:")
            lines += [f"  - {json.dumps(item, ensure_ascii=False)}" for item in value]
        else:
            lines.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
    return "\n".join([*lines, FENCE, "", body.rstrip("\n"), ""])


def parse(text: str, where: str) -> tuple[Ticket, str]:
    """The ticket and its Markdown body; a malformed file is an error naming it."""
    return parse_as(Ticket, text, where)


def parse_as(model: type[T], text: str, where: str) -> tuple[T, str]:
    """A ticket of ``model`` and its Markdown body."""
    head, body = _split(text, where)
    fields: dict[str, Any] = {}
    current: str | None = None
    try:
        for line in head:
            if line.startswith("  - ") and current in LIST_FIELDS:
                fields[current].append(json.loads(line[4:]))
                continue
            key, _, value = line.partition(":")
            current = key.strip()
            fields[current] = json.loads(value) if value.strip() else []
        return model.model_validate(fields), body
    except (json.JSONDecodeError, ValidationError) as exc:
        what = first_error(exc) if isinstance(exc, ValidationError) else str(exc)
        raise FaceoffError(
            f"front matter is not a valid ticket: {what}",
            where=where,
            fix="restore the file from the bundle",
        ) from exc


def _split(text: str, where: str) -> tuple[list[str], str]:
    lines = text.split("\n")
    if not lines or lines[0] != FENCE or FENCE not in lines[1:]:
        raise FaceoffError(
            "no front matter block between '---' lines", where=where, fix="restore the file"
        )
    end = lines.index(FENCE, 1)
    return lines[1:end], "\n".join(lines[end + 1 :]).strip("\n")
