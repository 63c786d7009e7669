"""What ``faceoff validate`` warns of in a declared rule without refusing it. Pure.

A cell the rule counts decides the outcome when it is not accepted (``not_accepted``). A
probe cell can fail for what the model is rather than how it is served — a needle a
random-weight model cannot recall, a JSON contract a small model breaks — and then a rule
about latency ends in no decision. So a rule that counts probe kinds is said out loud, and so
is a fidelity limit whose cell scores too few windows to decide it.
"""

from __future__ import annotations

from typing import NamedTuple

from matrix.cell import PROBE_KINDS
from matrix.fidelity import CALIBRATED_WINDOWS
from matrix.model import Matrix
from matrix.rule import NotAccepted


class RuleWarning(NamedTuple):
    finding: str  # starts with the field of the rule concerned
    fix: str


def rule_warnings(matrix: Matrix) -> list[RuleWarning]:
    """One warning per concern."""
    return probe_warnings(matrix) + fidelity_warnings(matrix)


def fidelity_warnings(matrix: Matrix) -> list[RuleWarning]:
    """A fidelity limit on a cell of too few windows decides nothing: said before the night."""
    rule = matrix.rule
    if rule is None:
        return []
    return [
        RuleWarning(
            f"rule.fidelity[{index}]: {criterion.metric} on fidelity cell {cell.id} rests on "
            f"{cell.windows} windows, fewer than the {CALIBRATED_WINDOWS} its interval is "
            "calibrated at: the figure is descriptive and the limit decides nothing",
            f"give fidelity cell {cell.id} windows = {CALIBRATED_WINDOWS} or more",
        )
        for index, criterion in enumerate(rule.fidelity)
        if criterion.metric != "greedy_agreement"  # an exact interval over greedy prompts
        for cell in matrix.fidelity
        if (criterion.cells is None or cell.id in criterion.cells)
        and cell.windows < CALIBRATED_WINDOWS
    ]


def probe_warnings(matrix: Matrix) -> list[RuleWarning]:
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
        RuleWarning(
            f"{field}: the rule counts probe cells {listed}; a probe the model cannot pass fails "
            f"its cell, and then not_accepted = {rule.not_accepted.value!r} decides the outcome",
            "give the criteria kinds = [...] or the rule cells = [...] without the probe cells, "
            "if they should not count",
        )
    ]
