"""Time: does the campaign fit its night? The worst case by the deadlines
(``lanes.deadlines.worst_case``) and an estimate, against the window's close or the
deadline (``matrix.night_window.budget_end``).

The estimate takes each cell run's median duration on earlier nights where the ledger has
one, else the plan's: its requests' prompts at a prefill rate and their outputs at a decode
rate typical of a large model on one node (the field report's retained recipe at C1:
about 5,000 and 75 tokens/s), in waves of the cell's concurrency, never beyond its
deadline; a simulator lane's at its time scale. Lane starts, warmups, the pilot and the
restoration come on top. Pure.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo

from faceoff.formats.preflight import CheckResult
from flows.campaign.preflight.catalog import fail, ok, warn
from lanes.deadlines import HOUR_S, worst_case
from matrix.arm import Arm
from matrix.campaign_plan import plan
from matrix.cell import Cell, WorkloadKind
from matrix.model import Matrix
from matrix.night_window import Window, budget_end

PREFILL_TPS = 5_000.0
DECODE_TPS = 75.0
TOKENS_PER_WORD = 1.5  # a controlled cell's output: its contract's words
ENGINE_START_S = 300.0  # a large model's load; never beyond the arm's startup deadline
SIMULATOR_START_S = 10.0
SMOKES_S = 30.0

Durations = Mapping[tuple[str, str], list[float]]


@dataclass(frozen=True)
class Estimate:
    total_s: float
    from_history: int  # cell runs whose time came from earlier nights
    cell_runs: int

    @property
    def sentence(self) -> str:
        whence = (
            f"{self.from_history} of {self.cell_runs} cell runs from earlier nights, the rest "
            if self.from_history
            else ""
        )
        rates = f"{PREFILL_TPS:,.0f} prefill and {DECODE_TPS:,.0f} decode tokens/s"
        return f"estimate {_h(self.total_s)} ({whence}from the plan at {rates})"


def estimate(matrix: Matrix, history: Durations, *, pilot: bool) -> Estimate:
    total, found, runs = 0.0, 0, 0
    for arm_plan in (p for p in plan(matrix).arms if p.cells):
        arm = arm_plan.arm
        total += start_s(arm) + arm.warmups * request_s(arm, arm_plan.cells[0])
        if pilot:
            total += start_s(arm) * (arm is not matrix.incumbent)  # a candidate boots twice
            total += sum(request_s(arm, c) for c in arm_plan.cells)  # at most one a cell
        for cell in arm_plan.cells:
            earlier = history.get((cell.id, arm.name))
            found += bool(earlier)
            runs += 1
            total += statistics.median(earlier) if earlier else cell_s(arm, cell)
    total += start_s(matrix.incumbent) + SMOKES_S
    return Estimate(total, found, runs)


def start_s(arm: Arm) -> float:
    guess = SIMULATOR_START_S if arm.simulator is not None else ENGINE_START_S
    return min(guess, arm.startup_deadline_s)


def request_s(arm: Arm, cell: Cell) -> float:
    """One request of the cell on one stream, by the nominal rates."""
    output = cell.output_tokens
    if cell.kind is WorkloadKind.CONTROLLED and cell.output_words is not None:
        output = min(output, math.ceil(cell.output_words * TOKENS_PER_WORD))
    seconds = cell.peak_input_tokens / PREFILL_TPS + output / DECODE_TPS
    return seconds / (arm.simulator.time_scale if arm.simulator is not None else 1.0)


def cell_s(arm: Arm, cell: Cell) -> float:
    """The cell's warmups and scored requests in waves of its concurrency (an open-loop
    cell's at its arrivals), never beyond its deadline."""
    one = request_s(arm, cell)
    if cell.open_loop:
        rates = [cell.rate] if cell.rate is not None else (cell.sweep and cell.sweep.rates) or []
        arrivals = sum((cell.requests - 1) / r for r in rates) if rates else 0.0
        seconds = arrivals + one * cell.steps
    else:
        seconds = one * math.ceil(cell.scored_requests / cell.concurrency)
    return min(seconds + one * cell.warmups, cell.deadline_s)


def time_check(
    matrix: Matrix, start: datetime, zone: tzinfo, history: Durations, *, pilot: bool
) -> CheckResult:
    """Pure: the worst case and the estimate against the night, from ``start``."""
    spec = matrix.campaign
    worst = worst_case(matrix).total_s
    guess = estimate(matrix, history, pilot=pilot)
    said = f"worst case {_h(worst)} by the deadlines; {guess.sentence}"
    end = budget_end(spec.window, spec.deadline, start, zone)
    if end is None:
        return ok("time", "campaign", f"{said}; no window or deadline bounds the night")
    budget_s = (end - start).total_seconds()
    night = f"the night from {_local(start, zone)} ends at {_local(end, zone)} ({_h(budget_s)})"
    if guess.total_s > budget_s:
        return fail(
            "time",
            "campaign",
            f"{said}; {night}: even the estimate does not fit",
            "fewer cells, requests or arms, lower deadlines, or a longer window",
        )
    if worst > budget_s:
        return warn(
            "time",
            "campaign",
            f"{said}; {night}: the estimate fits, the worst case does not",
            "cells a slow night would not reach end pending; order the matrix by importance",
        )
    return ok("time", "campaign", f"{said}; {night}: both fit")


def night_start(matrix: Matrix, now: datetime, zone: tzinfo, *, ahead: bool) -> datetime:
    """When the campaign starts: now for a run, or for a check ahead of the night, when its
    window next opens (the whole window is the night's)."""
    window = matrix.campaign.window
    if not ahead or window is None:
        return now
    return Window.parse(window).next_open(now, zone)


def _h(seconds: float) -> str:
    if seconds < 0:
        return "already past"
    return f"{seconds / HOUR_S:.1f} h" if seconds >= HOUR_S else f"{seconds / 60:.0f} min"


def _local(moment: datetime, zone: tzinfo) -> str:
    local = moment.astimezone(zone)
    return f"{local:%Y-%m-%d %H:%M} {local.tzname() or local.strftime('%z')}"
