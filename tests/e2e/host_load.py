"""What a loaded test host does to a campaign, told apart from what faceoff gets wrong.

A shared two-core host (parallel test workers, busy neighbours) can stall the client, or
hand it a whole answer in one read so that decode and TPOT are undefined, or starve the
scrapes; faceoff rightly refuses to score such a cell run. A test whose point is not the
dispositions accepts those blocks and nothing else.
"""

from __future__ import annotations

from pathlib import Path

from faceoff.formats.attempt.verdict import Presence, Verdict
from faceoff.formats.reasons import Disposition, Reason

# How the family check says a family went missing through the host, not the lane.
HOST_MADE = ("all output arrived in one chunk", "of the cell's ticks")


def by_the_host(verdict: Verdict) -> bool:
    """Blocked by the host's load: host_stall, or families missing only in the host's ways."""
    if verdict.reason is Reason.HOST_STALL:
        return True
    missing = [f for f in verdict.families if f.presence is Presence.MISSING]
    return (
        verdict.reason is Reason.FAMILY_MISSING
        and bool(missing)
        and all(any(said in (f.why or "") for said in HOST_MADE) for f in missing)
    )


def not_accepted_but_for_the_host(bundle: Path) -> list[str]:
    """Each cell run of ``bundle`` neither accepted nor blocked by the host, as a line."""
    verdicts = [Verdict.read(p) for p in sorted(bundle.glob("cells/*/*/attempt-*/verdict.json"))]
    return [
        f"{v.cell_id}/{v.arm} attempt {v.attempt}: {v.sentence}"
        for v in verdicts
        if v.disposition is not Disposition.ACCEPTED and not by_the_host(v)
    ]
