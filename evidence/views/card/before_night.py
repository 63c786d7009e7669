"""The card's "Before the night": what the preflight found on the campaign host (its WARNs,
every FAIL the operator waived and why) and what the pilot found before the scored cells.
The same concept at another layer: ``flows.prefect.before_night``.

Renders ``comparison.json``'s ``preflight`` and ``pilot``; computes nothing.
"""

from __future__ import annotations

from evidence.views.card.markdown import Sources, table
from faceoff.formats.bundle.comparison import Comparison
from faceoff.formats.pilot import PILOT_DIR, PILOT_FILE, PilotRecord
from faceoff.formats.preflight import PREFLIGHT_DIR, PreflightReport


def before_night_lead(c: Comparison) -> list[str]:
    """Lines under the scope: a waived check, or a pilot that blocked or stopped."""
    lines = []
    if c.waivers:
        said = "; ".join(f"{w.check} ({w.subject}): {w.waived}" for w in c.waivers)
        lines.append(f"**The run went on despite waived preflight FAILs**: {said}.")
    if c.pilot is not None and (c.pilot.failures or c.pilot.blocked):
        lines.append(f"**Pilot**: {c.pilot.sentence}.")
    return lines


def before_night(c: Comparison, sources: Sources) -> str:
    return "\n\n".join([_preflight(c.preflight, sources), _pilot(c.pilot, sources)])


def _preflight(reports: list[PreflightReport], sources: Sources) -> str:
    if not reports:
        return "Preflight: not recorded (the campaign ran without one)."
    paths = [f"{PREFLIGHT_DIR}/preflight-{n:03d}.json" for n in range(1, len(reports) + 1)]
    ref = sources.ref("preflight", paths)
    said = "\n".join(f"- {r.sentence} at {r.at:%Y-%m-%d %H:%M} UTC." for r in reports)
    flagged = [c for r in reports for c in (*r.warnings, *r.waived)]
    if not flagged:
        return f"Preflight {ref}:\n\n{said}\n\nNo check warned; none was waived."
    rows = [[c.check, c.subject, _status(c.waived), c.finding, c.waived or c.fix or ""]
            for c in flagged]  # fmt: skip
    return f"Preflight {ref}:\n\n{said}\n\n" + table(
        ["check", "subject", "status", "finding", "waiver's reason, or fix"], rows
    )


def _status(waived: str | None) -> str:
    return "**FAIL, waived**" if waived else "WARN"


def _pilot(record: PilotRecord | None, sources: Sources) -> str:
    if record is None:
        return "Pilot: none ran before the scored cells."
    ref = sources.ref("pilot", [f"{PILOT_DIR}/{PILOT_FILE}"])
    head = f"Pilot ({record.mode.value}) {ref}: {record.sentence}."
    rows = [
        [p.arm, p.cell_id, p.contract, _count(p.input_tokens), p.status, p.failure or "passed"]
        for p in record.probes
    ]
    probes = table(["arm", "cell", "contract", "input tokens", "status", "found"], rows)
    if not record.blocked:
        return f"{head}\n\n{probes}"
    blocked = "\n".join(
        f"- {b.cell_id} on {b.arm} ({b.reason_code}): {b.sentence}" for b in record.blocked
    )
    return f"{head}\n\n{probes}\n\nBlocked before the scored cells:\n\n{blocked}"


def _count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"
