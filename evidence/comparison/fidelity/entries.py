"""``comparison.json``'s fidelity entries: each arm against the reference, per fidelity cell.

Read from ``fidelity/<cell>/<arm>/`` (``faceoff.formats``): the stored per-position
log-probabilities are the native evidence (an arm's stored against the reference's, read
with them), and every figure here is recomputed from them
(``evidence.stats.fidelity``), so the audit's rebuild of the comparison recomputes them too.
An arm whose scores are missing or blocked has an entry saying so, never a figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evidence.stats.fidelity import (
    FidelityFigures,
    FigureInterval,
    GreedyAgreement,
    fidelity_figures,
    greedy_agreement,
    within_floor,
)
from faceoff.canonical import sha256_hex
from faceoff.formats.bundle.fidelity_entries import (
    Bounds,
    FidelityEntry,
    FidelityFiguresEntry,
    Greedy,
)
from faceoff.formats.fidelity_outcome import (
    BLOCKED_FILE,
    FIDELITY_DIR,
    FLOOR_DIR,
    GREEDY_FILE,
    KEPT_DIR,
    FidelityBlocked,
    GreedyAnswers,
    tokenizer_sentence,
)
from faceoff.formats.fidelity_scores import (
    ARRAYS_FILE,
    SCORES_FILE,
    FidelityScores,
    ScoredPositions,
    read_arrays,
)
from matrix.fidelity import FidelityCell
from matrix.model import Matrix

FIDELITY_METHOD = (
    "KLD(reference ‖ arm) at each position over the ids both engines returned "
    "(prompt_logprobs top-k and the corpus token) plus one bucket for the rest of the mass: "
    "a lower bound of the full KLD (merging outcomes cannot raise a divergence), exact "
    "where the returned ids hold all the mass; mean KLD with the 95 % generalized pivotal "
    "interval of a lognormal mean over its window means (20,000 draws, the campaign seed; "
    "the window bootstrap where a window's mean is 0); top-1 agreement: positions whose "
    "most likely id is the reference's, its interval 1 − that of the share that differs; "
    "p99 KLD with Woodruff's 98 % interval, windows as clusters; ln(PPL arm / PPL "
    "reference) with a 95 % expanded percentile bootstrap interval resampling whole windows "
    "(2,000 resamples, the campaign seed); Δp: the arm's minus the reference's probability "
    "of the reference's most likely id; greedy: tokens before the first differing token "
    "(median over prompts) and prompts identical to the end, with its exact binomial "
    "(Clopper–Pearson) 95 % interval; a rule's limit is judged on the interval, never on "
    "the figure alone, and with fewer than 12 windows the window figures are descriptive; "
    "floor: the reference scored again at another concurrency, an arm whose KLD interval "
    "reaches the floor's is indistinguishable from the reference"
)


def fidelity_entries(root: Path, matrix: Matrix) -> list[FidelityEntry]:
    """Every fidelity cell's candidates against its reference, from the campaign folder."""
    entries: list[FidelityEntry] = []
    for cell in matrix.fidelity:
        arms = [a.name for a in matrix.fidelity_arms(cell)]
        base = root / FIDELITY_DIR / cell.id
        entries += [cell_entry(base, cell, arms[0], arm, matrix.campaign.seed) for arm in arms[1:]]
    return entries


def cell_entry(
    base: Path, cell: FidelityCell, reference: str, arm: str, seed: int
) -> FidelityEntry:
    empty = FidelityEntry(
        cell=cell.id, arm=arm, reference=reference, k=cell.prompt_logprobs, figures=None,
        floor=None, within_floor=None, greedy=None, blocked=None, sources=[],
    )  # fmt: skip
    missing = why_missing(base / reference, reference) or why_missing(base / arm, arm)
    if missing is not None:
        partial = [p for name in (reference, arm) for p in partial_windows(base / name)]
        return empty.model_copy(update={"blocked": missing, "partial": partial})
    mismatch = tokenizers_differ(base, reference, arm)
    if mismatch is not None:
        return empty.model_copy(update={"blocked": mismatch})
    ours, theirs = read_scores(base / reference), read_scores(base / arm)
    figures = fidelity_figures(ours, theirs, seed=seed)
    floor = floor_bounds(base / reference, ours, seed)
    return empty.model_copy(
        update={
            "figures": figures_entry(figures),
            "floor": floor,
            "within_floor": None
            if floor is None
            else within_floor(figures.kld_mean, as_interval(floor)),
            "greedy": greedy_entry(base, reference, arm),
            "sources": sources(base, reference, arm),
        }
    )


def why_missing(folder: Path, arm: str) -> str | None:
    if (folder / SCORES_FILE).is_file():
        return None
    if (folder / BLOCKED_FILE).is_file():
        blocked = FidelityBlocked.read(folder / BLOCKED_FILE)
        return f"{arm} {blocked.reason}: {blocked.sentence}"
    kept = len(kept_windows(folder))
    if kept:
        return f"{arm} not scored: the run ended while it was scored ({kept} windows kept)"
    return f"{arm} not scored: the campaign ended before its fidelity cells ran"


def kept_windows(folder: Path) -> list[Path]:
    """The windows a scoring kept as each ended (``windows/``, the floor's too), in order."""
    kept = (folder / KEPT_DIR, folder / FLOOR_DIR / KEPT_DIR)
    return sorted(p for d in kept for p in d.glob("window-*.npz"))


def partial_scoring(entries: Sequence[FidelityEntry]) -> list[str]:
    """Each folder holding windows of a scoring that did not finish, in words: the audit's
    note that they are sealed as kept, in no figure."""
    folders: dict[str, set[str]] = {}
    why: dict[str, str] = {}
    for entry in entries:  # the reference's windows are named by each of its arms' entries
        for path in entry.partial:
            where = Path(path).parent.parent.as_posix()
            folders.setdefault(where, set()).add(path)
            why.setdefault(where, entry.blocked or "")
    return [
        f"partial scoring: {where} holds {len(paths)} windows of a scoring that did not "
        f"finish ({why[where]}); they are kept as scored and enter no figure"
        for where, paths in folders.items()
    ]


def scored_leftovers(root: Path) -> list[Path]:
    """Kept windows of an arm whose ``scores.npz`` holds them: a run killed between writing
    it and removing them left a second copy, which no figure reads."""
    found = (root / FIDELITY_DIR).glob(f"*/*/{KEPT_DIR}")
    floors = (root / FIDELITY_DIR).glob(f"*/*/{FLOOR_DIR}/{KEPT_DIR}")
    return sorted(d for d in (*found, *floors) if (d.parent / SCORES_FILE).is_file())


def partial_windows(folder: Path) -> list[str]:
    """An unscored arm's kept windows, relative to the campaign folder: partial scoring."""
    if (folder / SCORES_FILE).is_file():
        return []
    root = folder.parent.parent.parent
    return [p.relative_to(root).as_posix() for p in kept_windows(folder)]


def tokenizers_differ(base: Path, reference: str, arm: str) -> str | None:
    ours, theirs = (FidelityScores.read(base / name / SCORES_FILE) for name in (reference, arm))
    if ours.tokenizer_sha256 == theirs.tokenizer_sha256:
        return None
    said = tokenizer_sentence(arm, reference, theirs.tokenizer_sha256, ours.tokenizer_sha256)
    return f"{arm} tokenizer_differs: {said}"


def read_scores(folder: Path) -> list[ScoredPositions]:
    """The arm's windows, refused when scores.npz is not the file scores.json pinned; arrays
    stored against the reference's are read with the reference's, as pinned."""
    meta = FidelityScores.read(folder / SCORES_FILE)
    raw = pinned_arrays(folder, meta.arrays_sha256)
    if meta.stored_against is None:
        return read_arrays(raw)
    basis = folder / meta.stored_against
    theirs = FidelityScores.read(basis / SCORES_FILE)
    if theirs.stored_against is not None or theirs.arrays_sha256 != meta.against_sha256:
        raise ValueError(
            f"{folder / SCORES_FILE} is stored against {basis / ARRAYS_FILE}, which is not "
            "the file it pinned (or is itself stored against another)"
        )
    against = ScoredPositions.concatenate(read_arrays(pinned_arrays(basis, theirs.arrays_sha256)))
    return read_arrays(raw, against)


def pinned_arrays(folder: Path, sha256: str) -> bytes:
    raw = (folder / ARRAYS_FILE).read_bytes()
    if sha256_hex(raw) != sha256:
        raise ValueError(f"{folder / ARRAYS_FILE} is not the file {SCORES_FILE} pinned")
    return raw


def floor_bounds(folder: Path, reference: list[ScoredPositions], seed: int) -> Bounds | None:
    if not (folder / FLOOR_DIR / SCORES_FILE).is_file():
        return None
    again = read_scores(folder / FLOOR_DIR)
    return bounds(fidelity_figures(reference, again, seed=seed).kld_mean)


def greedy_entry(base: Path, reference: str, arm: str) -> Greedy | None:
    paths = base / reference / GREEDY_FILE, base / arm / GREEDY_FILE
    if not all(p.is_file() for p in paths):
        return None
    ours, theirs = (GreedyAnswers.read(p) for p in paths)
    agreement: GreedyAgreement = greedy_agreement(ours.answers, theirs.answers, ours.tokens)
    return Greedy(
        prompts=agreement.prompts,
        tokens=agreement.tokens,
        median_tokens_to_divergence=agreement.median_tokens_to_divergence,
        identical_share=agreement.identical_share.value,
        identical_interval=bounds(agreement.identical_share),
    )


def figures_entry(figures: FidelityFigures) -> FidelityFiguresEntry:
    return FidelityFiguresEntry(
        positions=figures.positions,
        windows=figures.windows,
        exact=figures.exact,
        kld_mean=bounds(figures.kld_mean),
        kld_median=figures.kld_median,
        kld_p99=figures.kld_p99.value,
        kld_p99_interval=bounds(figures.kld_p99),
        kld_max=figures.kld_max,
        top1_agreement=figures.top1_agreement.value,
        top1_interval=bounds(figures.top1_agreement),
        delta_p_mean=figures.delta_p_mean,
        ppl_reference=figures.ppl_reference,
        ppl_arm=figures.ppl_arm,
        ln_ppl_ratio=bounds(figures.ln_ppl_ratio),
        kld_quantiles=list(figures.kld_quantiles),
    )


def bounds(interval: FigureInterval) -> Bounds:
    return Bounds(value=interval.value, low=interval.low, high=interval.high)


def as_interval(entry: Bounds) -> FigureInterval:
    return FigureInterval(entry.value, entry.low, entry.high)


def sources(base: Path, reference: str, arm: str) -> list[str]:
    root = base.parent.parent
    found = [
        base / name / file
        for name in (reference, arm)
        for file in (SCORES_FILE, ARRAYS_FILE, GREEDY_FILE)
    ]
    found += [base / reference / FLOOR_DIR / f for f in (SCORES_FILE, ARRAYS_FILE)]
    return [str(p.relative_to(root)) for p in found if p.is_file()]
