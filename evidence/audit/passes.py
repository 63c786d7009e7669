"""The passes record checked against the evidence: a sequential cell's pass skipped as
"decided" or "futile" must have been decided, or stopped for futility, by the passes before it.
The same concept at another layer: ``faceoff.formats.passes``, ``flows.campaign.passes``.

``passes.json`` (``faceoff.formats.passes``) is written by the flow as it decides; what the
evidence decided can be decided again from the bundle: each skip of reason ``decided`` or
``futile`` is judged afresh (``evidence.comparison.sequential.needing_pass``) on the rebuilt
entries of the cells that ran in earlier passes, with the fidelity entries (scored in each
arm's first walk, so whole before any skip). A skip the evidence did not support is a
finding naming the skip and the criteria still undecided; so is a skip whose reason is not
the one the evidence gives (a futility stop recorded as a decision, or the reverse). Skips
of reason ``budget`` rest on the clock, recorded with their estimate; they are not
recomputed.
"""

from __future__ import annotations

from collections.abc import Sequence

from evidence.comparison.sequential import Need, needing_pass
from faceoff.formats.bundle.comparison import CellEntry
from faceoff.formats.bundle.fidelity_entries import FidelityEntry
from faceoff.formats.passes import PASSES_FILE, PassRecord
from matrix.model import Matrix


def passes_problems(
    record: PassRecord,
    matrix: Matrix,
    entries: Sequence[CellEntry],
    fidelity: Sequence[FidelityEntry] = (),
) -> list[tuple[str, str, str]]:
    """(file, field, problem) for every "decided" or "futile" skip the earlier passes do not
    support (``fidelity``: the fidelity entries, whole from each arm's first walk)."""
    pass_of = {c.id: c.pass_index for c in matrix.cells}
    written = {c.id: c.prompt_id for c in matrix.cells}
    found = []
    for number, skipped in enumerate(record.skipped):
        if skipped.reason == "budget":
            continue
        before = [e for e in entries if pass_of.get(e.id, 0) < skipped.index]
        needing = needing_pass(matrix, before, fidelity)
        for group in dict.fromkeys(written[c] for c in skipped.cells if c in written):
            need = needing.get(group)
            problem = _unsupported(group, skipped.index, skipped.reason, need)
            if problem is not None:
                found.append((PASSES_FILE, f"skipped[{number}]", problem))
    return found


def _unsupported(group: str, index: int, reason: str, need: Need | None) -> str | None:
    if need is None:
        return None
    if need.more:
        return (f"{group}'s pass {index} was skipped as {reason}, but the passes before it "
                f"leave it {need.why}")  # fmt: skip
    given = "futile" if need.futile else "decided"
    if given != reason:
        return (f"{group}'s pass {index} was skipped as {reason}, but the passes before it "
                f"make it {given}: {need.why}")  # fmt: skip
    return None
