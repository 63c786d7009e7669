"""The card's "Sequential passes" section: the design, each look, and why each cell stopped.
A renderer of ``comparison.json``'s ``sequential``: it computes nothing.
The same concept at another layer: ``evidence.comparison.sequential``,
``evidence.stats.sequential``.
"""

from __future__ import annotations

from evidence.comparison.sequential import label
from faceoff.format import level
from faceoff.formats.bundle.sequential_looks import (
    BudgetView,
    LookEntry,
    SequentialCell,
    SequentialCriterion,
    SequentialView,
)


def section(view: SequentialView) -> str:
    lines = [_design(view), *(_cell(c) for c in view.cells)]
    if view.budget is not None:
        lines.append(_budget(view.budget))
    return "## Sequential passes\n\n" + "\n\n".join(lines)


def _design(view: SequentialView) -> str:
    first = view.cells[0] if view.cells else None
    levels = ""
    if first is not None:
        shown = ", ".join(f"look {k + 1} {level(c)}" for k, c in enumerate(first.levels))
        levels = f" With {first.max_passes} looks, each look's interval is at {shown}."
    side = (1 - view.confidence) / 2
    return (
        f"A sequential cell runs pass after pass, both arms each time, while a criterion of the "
        f"rule is undecided in it; each pass is a look of a group-sequential design with "
        f"{view.spending} alpha spending, so that the {level(view.confidence)} confidence the "
        f"rule declares holds across the looks ({level(side)} of error on each side of a bound, "
        f"whatever look stops it).{levels}{_futility(view, first)}"
    )


def _futility(view: SequentialView, first: SequentialCell | None) -> str:
    if view.futility is None or first is None or not first.futility:
        return ""
    wedge = ", ".join(f"look {k + 1} ±{f:.2f}" for k, f in enumerate(first.futility[:-1]))
    return (
        f" A criterion still undecided stops, futile, at a look before the last whose combined "
        f"estimate lies within the futility wedge of its bound ({view.futility}, in standard "
        f"errors: {wedge}); it stops passes but decides nothing."
    )


def _cell(cell: SequentialCell) -> str:
    ran = len(cell.passes_run)
    head = f"- **{cell.cell}**: {ran} of {cell.max_passes} passes run; stopped: {cell.stopped}."
    return "\n".join([head, *(f"  - {_criterion(c)}" for c in cell.criteria)])


def _criterion(line: SequentialCriterion) -> str:
    name = label(line)
    looks = "; ".join(_look(look) for look in line.looks) or "no look (no comparable pass)"
    decided = (
        f"{line.status.replace('_', ' ')} at look {line.decided_at}"
        if line.decided_at is not None
        else f"futile at look {line.futile_at}: undecided"
        if line.futile_at is not None
        else f"{line.status.replace('_', ' ')}: undecided"
    )
    return f"{name}, {line.candidate}, bound {line.bound:.2f}: {looks} — {decided}."


def _look(look: LookEntry) -> str:
    if look.ratio is None or look.low is None or look.high is None:
        return f"look {look.look} missing"
    if look.low == look.high:
        return f"look {look.look} {look.ratio:.2f}× (point ratio) {look.status.replace('_', ' ')}"
    return (
        f"look {look.look} {look.ratio:.2f}× ({level(look.confidence)} "
        f"{look.low:.2f}–{look.high:.2f}) {look.status.replace('_', ' ')}"
    )


def _budget(budget: BudgetView) -> str:
    end = (
        f"the budget ended {budget.budget_end:%Y-%m-%d %H:%M:%S %Z}"
        if budget.budget_end
        else "no window or deadline"
    )
    reserve = (
        f", {budget.restore_reserve_s:.0f} s kept for restoring the incumbent"
        if budget.restore_reserve_s is not None
        else ""
    )
    stop = f" Stopped: {budget.stop}." if budget.stop else ""
    return f"Passes run: {budget.passes} ({end}{reserve}).{stop}"
