"""The card's fidelity section: each arm against the reference, measured on the lanes.
The same concept at another layer: ``evidence.stats.fidelity``, ``matrix.fidelity``,
``workload.fidelity``.

Renders ``comparison.json``'s ``fidelity``; computes nothing. The KLD is a lower bound
unless the engine returned the whole vocabulary, and the row says which, with k; an arm
within the noise floor is "indistinguishable", never "0"; a greedy run that is not
identical to the reference's is said in words, since a lossless change should be.
"""

from __future__ import annotations

import math

from evidence.views.card.markdown import Sources
from faceoff.formats.bundle.comparison import Comparison
from faceoff.formats.bundle.fidelity_entries import Bounds, FidelityEntry

NONE = "No fidelity cell ran (`[[fidelity]]` in the matrix)."
HEADER = (
    "| cell | arm vs reference | KLD mean [95 % CI] | median | p99 | max | same top-1 | Δp "
    "| PPL ratio [95 % CI] | greedy: identical, median tokens to divergence | floor |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def section(c: Comparison, sources: Sources) -> str:
    if not c.fidelity:
        return NONE
    rows = [row(e, sources) for e in c.fidelity]
    notes = [n for e in c.fidelity for n in notes_of(e)]
    return "\n".join([HEADER, *rows]) + ("\n\n" + "\n".join(notes) if notes else "")


def row(e: FidelityEntry, sources: Sources) -> str:
    ref = sources.ref(f"fidelity[{e.cell}/{e.arm}]", e.sources) if e.sources else ""
    who = f"{e.arm} vs {e.reference} {ref}".strip()
    f = e.figures
    if f is None:
        return f"| {e.cell} | {who} | not scored |" + " |" * 8
    kind = "exact" if f.exact else f"≥, top-{e.k} + rest"
    ratio = Bounds(
        value=math.exp(f.ln_ppl_ratio.value),
        low=math.exp(f.ln_ppl_ratio.low),
        high=math.exp(f.ln_ppl_ratio.high),
    )
    return (
        f"| {e.cell} | {who} | {interval(f.kld_mean, 4)} ({kind}) | {f.kld_median:.4f} "
        f"| {f.kld_p99:.4f} | {f.kld_max:.4f} | {f.top1_agreement:.1%} | {f.delta_p_mean:+.4f} "
        f"| {interval(ratio, 4)} | {greedy(e)} | {floor(e)} |"
    )


def interval(b: Bounds, digits: int) -> str:
    return f"{b.value:.{digits}f} [{b.low:.{digits}f}, {b.high:.{digits}f}]"


def greedy(e: FidelityEntry) -> str:
    g = e.greedy
    if g is None:
        return "not run"
    return f"{g.identical_share:.0%} of {g.prompts}, {g.median_tokens_to_divergence:g}/{g.tokens}"


def floor(e: FidelityEntry) -> str:
    if e.floor is None:
        return "not measured"
    verdict = "indistinguishable" if e.within_floor else "above"
    return f"{verdict} (floor {interval(e.floor, 4)})"


def notes_of(e: FidelityEntry) -> list[str]:
    notes = []
    if e.blocked:
        notes.append(f"- {e.cell}, {e.arm}: blocked — {e.blocked}")
    if e.greedy is not None and e.greedy.identical_share < 1.0:
        notes.append(
            f"- {e.cell}, {e.arm}: greedy answers differ from the reference's in "
            f"{1 - e.greedy.identical_share:.0%} of {e.greedy.prompts} prompts; a lossless "
            "change (speculative decoding, a scheduler flag) should give 100 %."
        )
    return notes


def decision_words(c: Comparison, arm: str) -> str | None:
    """The arm's fidelity for the decision line, e.g. 'KLD 0.021 [0.018, 0.024] vs incumbent'."""
    entry = next((e for e in c.fidelity if e.arm == arm and e.figures is not None), None)
    if entry is None or entry.figures is None:
        return None
    words = f"KLD {interval(entry.figures.kld_mean, 3)} vs {entry.reference}"
    return words + (", within the noise floor" if entry.within_floor else "")
