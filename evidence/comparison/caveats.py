"""Caveats generated from the data: what the evidence cannot carry. Pure.

Each rule looks at the comparison's own entries and returns a caveat only when
its condition holds, so a caveat never appears for a campaign it does not fit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from faceoff.format import join_words
from faceoff.formats.bundle.comparison import (
    ArmCell,
    ArmEntry,
    Caveat,
    CellEntry,
    Coverage,
    RestorationEntry,
)
from faceoff.formats.reasons import Disposition

RECIPE_FIELDS = {
    "checkpoint": "checkpoint",
    "weight_format": "weight format",
    "tensor_parallel": "TP",
    "decode_context_parallel": "DCP",
    "kv_cache_dtype": "KV dtype",
    "speculation": "speculation",
    "max_num_batched_tokens": "prefill budget",
    "memory": "memory settings",
}
LENGTH_SPREAD = 1.2  # completion p50s further apart than this are called out


def caveats(
    arms: Sequence[ArmEntry],
    cells: Sequence[CellEntry],
    coverage: Coverage,
    restoration: RestorationEntry,
    not_applicable: dict[str, str],
) -> list[Caveat]:
    rules: list[Callable[[], Caveat | None]] = [
        lambda: _sample_size(cells),
        lambda: _queueing(cells),
        lambda: _recipes_differ(arms),
        lambda: _speculation(arms),
        lambda: _simulated(arms),
        lambda: _energy(cells),
        lambda: _output_lengths(cells),
        lambda: _sampled_maxima(cells),
        lambda: _not_applicable(not_applicable),
        lambda: _unverified(arms),
        lambda: _incomplete(coverage),
        lambda: _no_oom(cells),
        lambda: _restoration(restoration),
    ]
    return [c for c in (rule() for rule in rules) if c is not None]


def _accepted(cells: Sequence[CellEntry]) -> list[tuple[CellEntry, list[ArmCell]]]:
    return [(c, [a for a in c.arms if a.disposition is Disposition.ACCEPTED]) for c in cells]


def _sample_size(cells: Sequence[CellEntry]) -> Caveat | None:
    ns = sorted(
        {a.metrics["e2e_s"].n for c, arms in _accepted(cells) for a in arms if "e2e_s" in a.metrics}
    )
    if not ns:
        return None
    sizes = join_words([f"n={n}" for n in ns], "or")
    return Caveat(
        code="small_n",
        text=f"p50/p95 describe {sizes} populations per cell and arm; they do not establish a "
        "stable p99, service-level tail latency or long-running stability.",
    )


def _queueing(cells: Sequence[CellEntry]) -> Caveat | None:
    if not any(a.metrics for c in cells for a in c.arms):
        return None
    concurrent = any(c.concurrency > 1 for c in cells)
    text = (
        "Effective prefill is prompt tokens divided by TTFO and therefore includes queueing, "
        "scheduling, cache effects and the first output step; it is not a kernel rate."
    )
    if concurrent:
        text += (
            " At concurrency above 1, decode and E2E include scheduling stalls behind other "
            "requests; engine queue and prefill means are reported separately."
        )
    return Caveat(code="queueing_included", text=text)


def _recipes_differ(arms: Sequence[ArmEntry]) -> Caveat | None:
    base = arms[0].recipe
    differ = [
        label
        for field, label in RECIPE_FIELDS.items()
        if any(getattr(a.recipe, field) != getattr(base, field) for a in arms[1:])
    ]
    if len(differ) < 2:
        return None
    return Caveat(
        code="complete_recipes",
        text=f"The arms differ in {join_words(differ, 'and')}: this compares complete recipes, "
        "not an isolated quantization, parallelism or speculation effect.",
    )


def _speculation(arms: Sequence[ArmEntry]) -> Caveat | None:
    kinds = {a.name: a.recipe.speculation or "unstated" for a in arms}
    if len(set(kinds.values())) < 2:
        return None
    listed = join_words([f"{name} {kind}" for name, kind in kinds.items()], "and")
    return Caveat(
        code="speculation_not_isolated",
        text=f"Speculative decoding differs ({listed}) and no otherwise matched arm with it "
        "switched off ran, so these results cannot isolate a speculation benefit.",
    )


def _simulated(arms: Sequence[ArmEntry]) -> Caveat | None:
    sims = [a for a in arms if a.simulator is not None]
    if not sims:
        return None
    listed = join_words(
        [f"{a.name} (profile {a.simulator.profile}, time_scale {a.simulator.time_scale:g})"
         for a in sims if a.simulator],
        "and",
    )  # fmt: skip
    return Caveat(
        code="simulator_lanes",
        text=f"Simulated lanes: {listed}. Their timings come from the simulator's engine model "
        "run time_scale times faster than modelled; they exercise faceoff, they do not "
        "measure a GPU.",
    )


def _energy(cells: Sequence[CellEntry]) -> Caveat | None:
    measured = [(c.id, a) for c, arms in _accepted(cells) for a in arms if a.energy]
    if not measured:
        return None
    text = (
        "Energy is every GPU of an arm over the scored window, idle draw included; it leaves "
        "out the host, the network and cooling."
    )
    if any(a.energy and a.energy.simulated for _, a in measured):
        text += " Energy read from a simulator's virtual GPUs is simulated, not measured."
    integrated = [
        f"{cell}/{a.arm}" for cell, a in measured if a.energy and a.energy.method != "counter"
    ]
    if integrated:
        text += (
            f" In {join_words(integrated, 'and')} the energy counter was not usable on every "
            "GPU: its power samples (every 2 s) were integrated instead."
        )
    return Caveat(code="energy_scope", text=text)


def _output_lengths(cells: Sequence[CellEntry]) -> Caveat | None:
    spread = []
    for cell, accepted in _accepted(cells):
        p50s = [
            a.completion_tokens.p50
            for a in accepted
            if a.completion_tokens and a.completion_tokens.p50
        ]
        if len(p50s) > 1 and max(p50s) > LENGTH_SPREAD * min(p50s):
            spread.append(cell.id)
    if not spread:
        return None
    return Caveat(
        code="output_lengths_differ",
        text=f"Completion lengths differ between arms by more than {LENGTH_SPREAD - 1:.0%} "
        f"(median) in {join_words(spread, 'and')}; decode and E2E there compare different "
        "output lengths. The summaries keep each arm's length distribution.",
    )


def _sampled_maxima(cells: Sequence[CellEntry]) -> Caveat | None:
    memories = [a.memory for c in cells for a in c.arms if a.memory is not None]
    if not memories:
        return None
    text = "Sampled memory and occupancy maxima are lower bounds on transient peaks."
    if any(m.worst_gpu_used_bytes is not None for m in memories):
        text += " GPU figures are the worst single device, never the sum of devices."
    if any(m.lane_source and m.lane_source.startswith("cgroup") for m in memories):
        text += " Cgroup memory includes page cache; it is not model-tensor RAM."
    return Caveat(code="sampled_maxima", text=text)


def _not_applicable(declared: dict[str, str]) -> Caveat | None:
    if not declared:
        return None
    listed = "; ".join(f"{name}: {why}" for name, why in sorted(declared.items()))
    return Caveat(
        code="families_not_applicable",
        text=f"Declared not applicable in the frozen matrix, so not measured: {listed}.",
    )


def _unverified(arms: Sequence[ArmEntry]) -> Caveat | None:
    bad = [a.name for a in arms if a.identity.verified is not True]
    if not bad:
        return None
    return Caveat(
        code="identity_unverified",
        text=f"Identity was not verified for {join_words(bad, 'and')}; what served there is "
        "not proven to be the recipe named.",
    )


def _incomplete(coverage: Coverage) -> Caveat | None:
    if coverage.status == "complete":
        return None
    return Caveat(
        code="partial_coverage",
        text=f"The plan is not fully covered ({coverage.accepted} accepted, {coverage.failed} "
        f"failed, {coverage.blocked} blocked, {coverage.pending} pending of {coverage.planned}); "
        "accepted cells remain separately useful but do not erase the others.",
    )


def _no_oom(cells: Sequence[CellEntry]) -> Caveat | None:
    seen = [a.oom for c in cells for a in c.arms if a.disposition is Disposition.ACCEPTED]
    if not seen or any(seen):
        return None
    return Caveat(
        code="bounded_cells",
        text="Zero OOM observations in these bounded cells do not establish endurance or a "
        "safe production memory reserve.",
    )


def _restoration(restoration: RestorationEntry) -> Caveat | None:
    if restoration.proven:
        return None
    why = restoration.problem or "; ".join(restoration.problems) or restoration.outcome
    return Caveat(
        code="restoration_not_proven",
        text=f"Restoration of the incumbent is not proven: {why}.",
    )
