"""The card's host posture: the settings at the campaign's start and end, changes flagged.

Renders ``comparison.json``'s ``posture``; computes nothing.
"""

from __future__ import annotations

from collectors.posture import COMPARED, END_FILE, POSTURE_DIR, START_FILE, HostPosture
from evidence.comparison.model import Comparison
from evidence.views.card.markdown import Sources, table

MISSING = "—"


def posture(c: Comparison, sources: Sources) -> str:
    view = c.posture
    if view is None:
        return "Not recorded: the campaign ran without the flow that reads the host's posture."
    ref = sources.ref("posture", [f"{POSTURE_DIR}/{START_FILE}", f"{POSTURE_DIR}/{END_FILE}"])
    rows = [
        [name, _value(view.start, name), _value(view.end, name),
         "**changed**" if _value(view.start, name) != _value(view.end, name) else ""]
        for name in COMPARED
    ]  # fmt: skip
    flagged = (
        "**The host's posture changed during the campaign**: " + "; ".join(view.changes) + "."
        if view.changes
        else "No setting changed between the start and the end."
    )
    return f"{flagged} {ref}\n\n" + table(["setting", "start", "end", ""], rows)


def _value(snapshot: HostPosture | None, name: str) -> str:
    if snapshot is None:
        return "not recorded"
    value = getattr(snapshot, name)
    if isinstance(value, list):
        return ", ".join(value) or MISSING
    return MISSING if value is None else str(value)
