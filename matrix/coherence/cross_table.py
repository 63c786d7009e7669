"""Fields of different tables that must agree: an arm's weights manifest and the other
arm's model, a cell's deadline and what its requests need, the rule and the cells it
judges. Each contradiction loses the night or its decision without an error at run time,
so ``Matrix`` refuses it as it validates, both fields named. Pure.
"""

from __future__ import annotations

import math
from pathlib import PurePosixPath
from typing import Protocol

from matrix.arm import Arm, LaneKind
from matrix.cell import Cell, WorkloadKind
from matrix.fields import FieldError
from matrix.rule import Criterion, Rule


class Tables(Protocol):
    """What these checks read of a ``matrix.model.Matrix`` (which validates by them, so
    they cannot import it)."""

    @property
    def arms(self) -> list[Arm]: ...
    @property
    def cells(self) -> list[Cell]: ...
    @property
    def rule(self) -> Rule | None: ...
    @property
    def incumbent(self) -> Arm: ...
    @property
    def candidates(self) -> list[Arm]: ...
    def cells_for(self, arm: Arm) -> list[Cell]: ...
    def arms_of(self, cell: Cell) -> list[Arm]: ...


# Faster than any engine serves one request today (speculative decoding and the largest
# GPUs included): a deadline below what these rates need cannot be met by any lane.
FASTEST_DECODE_TPS = 2000.0  # output tokens per second of one stream
FASTEST_PREFILL_TPS = 200_000.0  # input tokens per second of one request
WARMUP_RATIO = 10  # warmups beyond this many times the scored requests dwarf them
MIN_DWARFING_WARMUPS = 20  # a handful of warmups is never too many
DECODE_METRICS = ("decode_tps", "tpot_s")  # measured between output tokens


def check_tables(matrix: Tables) -> None:
    """FieldError for the first contradiction between tables, naming the field to fix."""
    _manifests(matrix.arms)
    for index, cell in enumerate(matrix.cells):
        _deadline(matrix, index, cell)
        _cell_warmups(index, cell)
    for index, arm in enumerate(matrix.arms):
        _arm_warmups(matrix, index, arm)
    if matrix.rule is not None:
        _rule_cells(matrix, matrix.rule)


def host_path(arm: Arm, path: str) -> str:
    """A lane path as the host sees it: through the longest matching mount for Docker."""
    wanted = PurePosixPath(path)
    if arm.lane is not LaneKind.DOCKER:
        return str(wanted)
    mounts = [m for m in arm.mounts if wanted.is_relative_to(m.target)]
    if not mounts:
        return str(wanted)
    mount = max(mounts, key=lambda m: len(PurePosixPath(m.target).parts))
    return str(PurePosixPath(mount.source) / wanted.relative_to(mount.target))


def _manifests(arms: list[Arm]) -> None:
    """The identity check hashes the ``weights_manifest`` directory; pointed at the other
    arm's model (as its lane names it, or on the host) it proves the wrong weights."""
    for index, arm in enumerate(arms):
        if arm.weights_manifest is None:
            continue
        mine = _places(arm, arm.weights_manifest)
        own = _places(arm, arm.model) if arm.model is not None else set()
        for other in arms:
            theirs = _places(other, other.model) if other.model is not None else set()
            if other is arm or not mine & theirs or own & theirs:
                continue
            raise FieldError(
                ("arms", index, "weights_manifest"),
                f"weights_manifest = {arm.weights_manifest!r} is the model of arm "
                f"{other.name!r} (its command serves {other.model}), not the one arm "
                f"{arm.name!r} serves ({arm.model or 'its command names none'}): the identity "
                "check would prove the other arm's weights; point it at the arm's own model",
            )


def _places(arm: Arm, path: str) -> set[str]:
    """A lane path as the lane names it and as the host sees it."""
    return {path, host_path(arm, path)}


def _deadline(matrix: Tables, index: int, cell: Cell) -> None:
    """A closed-loop cell's requests need at least their prefill and their forced output at
    the fastest rates; a deadline below that fails the cell on every arm it runs on."""
    if not timed(cell):
        return
    forced = forced_output(cell)
    for arm in matrix.arms_of(cell):
        need_s = fastest_s(cell, forced, arm)
        if cell.deadline_s < need_s:
            raise FieldError(
                ("cells", index, "deadline_s"),
                f"deadline_s = {cell.deadline_s:g} is below the {need_s:,.0f} s its "
                f"{rounds(cell)} round(s) of requests (requests + warmups over concurrency "
                f"{cell.concurrency}) need on arm {arm.name!r} even at "
                f"{FASTEST_PREFILL_TPS:,.0f} input and {FASTEST_DECODE_TPS:,.0f} output tok/s "
                f"(input_tokens = {cell.peak_input_tokens}, {forced} output tokens forced); "
                "raise deadline_s or lower requests",
            )


def timed(cell: Cell) -> bool:
    """A closed-loop cell, whose rounds of requests its deadline must hold (an open-loop
    one's arrivals are checked against it as it loads)."""
    return not cell.open_loop and cell.kind is not WorkloadKind.NEEDLE_SEARCH


def rounds(cell: Cell) -> int:
    """Requests and warmups in waves of the cell's concurrency."""
    return math.ceil((cell.scored_requests + cell.warmups) / cell.concurrency)


def fastest_s(cell: Cell, output_tokens: int, arm: Arm) -> float:
    """The cell's rounds at the fastest rates, each request writing ``output_tokens`` (a
    simulator runs its ``time_scale`` times faster)."""
    one_s = cell.peak_input_tokens / FASTEST_PREFILL_TPS + output_tokens / FASTEST_DECODE_TPS
    return rounds(cell) * one_s / (arm.simulator.time_scale if arm.simulator else 1.0)


def forced_output(cell: Cell) -> int:
    """Output tokens each request must produce whatever the model says: exact lengths."""
    if cell.kind is WorkloadKind.PREFILL_PROBE:
        return 1
    if cell.sampling.ignore_eos:
        return cell.sampling.max_tokens
    return cell.output_words or 0  # a strict contract's words are a token each at least


def _cell_warmups(index: int, cell: Cell) -> None:
    if cell.warmups >= MIN_DWARFING_WARMUPS and cell.warmups > WARMUP_RATIO * cell.requests:
        raise FieldError(
            ("cells", index, "warmups"),
            f"warmups = {cell.warmups} dwarf the {cell.requests} scored requests (requests); "
            f"the cell's deadline and the night go to unscored work: give at most "
            f"{WARMUP_RATIO}× requests, or more requests",
        )


def _arm_warmups(matrix: Tables, index: int, arm: Arm) -> None:
    scored = sum(c.scored_requests for c in matrix.cells_for(arm))
    if arm.warmups >= MIN_DWARFING_WARMUPS and arm.warmups > WARMUP_RATIO * scored:
        raise FieldError(
            ("arms", index, "warmups"),
            f"warmups = {arm.warmups} dwarf the {scored} scored requests of the arm's cells "
            f"(cells' requests); give at most {WARMUP_RATIO}× those, or more requests",
        )


def _rule_cells(matrix: Tables, rule: Rule) -> None:
    """Every criterion judges some cell both the incumbent and a candidate it judges run,
    every cell the rule names is run by such a candidate, and no decode criterion judges a
    cell whose requests stop after one token."""
    for name in rule.cells or []:
        _named_cell_paired(matrix, name, ("rule", "cells"), rule.candidates)
    for index, criterion in enumerate(rule.criteria):
        where: tuple[str | int, ...] = ("rule", "criteria", index)
        judging = _judged(matrix, rule, criterion)
        for name in criterion.cells or []:
            _named_cell_paired(matrix, name, (*where, "cells"), judging)
        judged = [c for c in matrix.cells if _paired(matrix, rule, criterion, c)]
        if not judged:
            field = "kinds" if criterion.kinds else "cells" if criterion.cells else "metric"
            raise FieldError(
                (*where, field),
                f"the criterion on {criterion.metric} (kinds = {criterion.kinds}, cells = "
                f"{criterion.cells or rule.cells}) judges no cell that the incumbent and a "
                "candidate it judges both run, so the rule could never decide; give it kinds "
                "or cells of the matrix's cells (their kind and arms)",
            )
        _decode_needs_tokens(criterion, judged, where)


def _judged(matrix: Tables, rule: Rule, criterion: Criterion) -> list[str]:
    return [a.name for a in matrix.candidates if criterion in rule.criteria_for(a.name)]


def _paired(matrix: Tables, rule: Rule, criterion: Criterion, cell: Cell) -> bool:
    names = {cell.id, cell.prompt_id}
    runs = {a.name for a in matrix.arms_of(cell)}
    judged = set(_judged(matrix, rule, criterion))
    return (
        rule.counts(names, cell.kind.value, criterion)
        and matrix.incumbent.name in runs
        and bool(judged & runs)
    )


def _named_cell_paired(
    matrix: Tables, name: str, where: tuple[str | int, ...], judged: list[str] | None
) -> None:
    candidates = set(judged if judged is not None else [a.name for a in matrix.candidates])
    named = [c for c in matrix.cells if name in (c.id, c.prompt_id)]
    runs = {a.name for c in named for a in matrix.arms_of(c)}
    if named and not candidates & runs:
        arms = ", ".join(sorted(runs))
        raise FieldError(
            where,
            f"names cell {name!r}, which only {arms} runs (its cells entry's arms), no "
            "candidate the rule judges: there is no pair to judge; drop it from the rule "
            "or give the cell the candidate too",
        )


def _decode_needs_tokens(
    criterion: Criterion, judged: list[Cell], where: tuple[str | int, ...]
) -> None:
    if criterion.metric not in DECODE_METRICS:
        return
    single = [c.id for c in judged if c.output_tokens == 1]
    if single:
        field = "kinds" if criterion.kinds else "cells" if criterion.cells else "metric"
        raise FieldError(
            (*where, field),
            f"the criterion on {criterion.metric} judges cells whose requests stop after one "
            f"token (max_tokens = 1 or prefill_probe: {', '.join(single)}), which have no "
            f"{criterion.metric} to compare; give the criterion kinds = [...] or cells = [...] "
            "without them",
        )
