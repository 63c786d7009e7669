"""What ``faceoff validate`` warns of in a declared rule without refusing it. Pure.

A cell the rule counts decides the outcome when it is not accepted (``not_accepted``). A
probe cell can fail for what the model is rather than how it is served — a needle a
random-weight model cannot recall, a JSON contract a small model breaks — and then a rule
about latency ends in no decision. So a rule that counts probe kinds is said out loud.
"""

from __future__ import annotations

from matrix.cell import PROBE_KINDS
from matrix.model import Matrix
from matrix.rule import NotAccepted


def rule_warnings(matrix: Matrix) -> list[str]:
    """One warning per concern, each starting with the field of the rule concerned."""
    rule = matrix.rule
    if rule is None or rule.not_accepted is NotAccepted.IGNORE:
        return []
    probes = {
        cell.id: cell.kind.value
        for arm in matrix.candidates
        for cell in matrix.cells_for(arm)
        if cell.kind in PROBE_KINDS
        and rule.counted({cell.id, cell.prompt_id}, cell.kind.value, arm.name)
    }
    if not probes:
        return []
    field = "rule.cells" if rule.cells is not None else "rule.criteria"
    listed = ", ".join(f"{cell} ({kind})" for cell, kind in probes.items())
    return [
        f"{field}: the rule counts probe cells {listed}; a probe the model cannot pass fails "
        f"its cell, and then not_accepted = {rule.not_accepted.value!r} decides the outcome"
    ]
