"""An arm's fidelity cells, on its lane after its speed cells: score, floor, greedy, files.

Each (fidelity cell, arm) writes ``fidelity/<cell>/<arm>/``: ``scores.npz`` and, last,
``scores.json`` (the mark that the arm is scored: a resumed run skips it), the
reference's ``floor/`` scored again at the floor's concurrency, and ``greedy.json``; or
``blocked.json`` with the reason. Each window's scores are kept in ``windows/`` the moment
they come back, so a run killed while scoring resumes with the windows it had. Each arm
scores its own tokenization of the corpus; one whose ids differ from the reference's is
blocked naming both arms (here when the reference was scored first, else when the
comparison is built), since its log-probabilities would be of other tokens. An arm
scored after the reference, and the reference's floor, store their arrays against the
reference's (``faceoff.formats.fidelity_scores``): most positions return the same ids.
"""

from __future__ import annotations

import shutil
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from faceoff.canonical import sha256_hex
from faceoff.errors import FaceoffError
from faceoff.files import write_bytes_atomic
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
    arrays_bytes,
    read_arrays,
)
from flows.campaign.arm import ArmRun
from flows.campaign.context import CampaignContext
from lanes.http import Http, UrllibHttp
from matrix.arm import Arm
from matrix.fidelity import FidelityCell
from matrix.sources import pinned_bytes
from workload.fidelity import (
    Answer,
    LaneRefused,
    Post,
    ScoringLane,
    corpus_sha256,
    corpus_text,
    cut_windows,
    greedy_answers,
    score_windows,
)

REQUEST_TIMEOUT_S = 300.0  # one window scored: long prompts on a slow CPU engine
# A window's prompt_logprobs: ~60 bytes an id, k + 1 ids a position (512 tokens at k = 20
# is 0.7 MB; a whole 3,072-id vocabulary over 128 tokens, 24 MB).
SCORES_BODY = 256 * 1024 * 1024


def fidelity_folder(campaign_dir: Path, cell: FidelityCell, arm: str) -> Path:
    return campaign_dir / FIDELITY_DIR / cell.id / arm


def fidelity_pending(context: CampaignContext, arm: Arm) -> bool:
    """Whether a fidelity cell still has to score ``arm`` (neither scored nor blocked)."""
    matrix = context.frozen.matrix
    return any(
        not done(fidelity_folder(context.campaign_dir, cell, arm.name))
        for cell in matrix.fidelity
        if arm.name in [a.name for a in matrix.fidelity_arms(cell)]
    )


def done(folder: Path) -> bool:
    return (folder / SCORES_FILE).is_file() or (folder / BLOCKED_FILE).is_file()


def run_fidelity(context: CampaignContext, run: ArmRun) -> list[Said]:
    """Every fidelity cell that scores this arm and has not yet: scored, or blocked. What
    each of them ended as, for the run's log."""
    matrix = context.frozen.matrix
    said = []
    for cell in matrix.fidelity:
        if run.arm.name not in [a.name for a in matrix.fidelity_arms(cell)]:
            continue
        folder = fidelity_folder(context.campaign_dir, cell, run.arm.name)
        if done(folder):
            continue
        try:
            score_arm(context, run, cell, folder)
        except LaneRefused as exc:
            block(folder, run.arm.name, exc.reason, exc.sentence)
        said.append(ended_as(folder, cell.id, run.arm.name))
    return said


@dataclass(frozen=True)
class Said:
    scored: bool
    sentence: str


def ended_as(folder: Path, cell_id: str, arm: str) -> Said:
    """A fidelity cell's end on one arm in words: its windows scored, or why it was blocked."""
    if (folder / BLOCKED_FILE).is_file():
        blocked = FidelityBlocked.read(folder / BLOCKED_FILE)
        return Said(
            False, f"fidelity {cell_id} on {arm}: blocked ({blocked.reason}): {blocked.sentence}"
        )
    scores = FidelityScores.read(folder / SCORES_FILE)
    return Said(
        True,
        f"fidelity {cell_id} on {arm}: {len(scores.window_tokens)} windows, "
        f"{sum(scores.window_tokens):,} positions scored at k = {scores.k}",
    )


def block(folder: Path, arm: str, reason: str, sentence: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    FidelityBlocked(arm=arm, reason=reason, sentence=sentence).write(
        folder / BLOCKED_FILE, replace=True
    )


def score_arm(context: CampaignContext, run: ArmRun, cell: FidelityCell, folder: Path) -> None:
    if not run.usable:
        raise LaneRefused("lane_unusable", f"the lane could not serve: {run.reason}")
    post, deadline = adapter(UrllibHttp(SCORES_BODY)), time.monotonic() + cell.deadline_s
    lane = ScoringLane(run.base_url, run.arm.served_model, post, REQUEST_TIMEOUT_S, deadline)
    tokens = lane.tokenize(corpus(cell))
    reference = context.frozen.matrix.fidelity_reference.name
    basis = None
    if run.arm.name != reference:
        basis = reference_basis(context, cell, run.arm.name, reference, corpus_sha256(tokens))
    windows = cut_windows(tokens, cell)
    folder.mkdir(parents=True, exist_ok=True)
    scored = kept_scoring(lane, windows, cell.prompt_logprobs, cell.concurrency, folder)
    basis = basis if basis is not None and basis.fits(scored) else None
    raw = arrays_bytes(scored, basis.positions if basis else None)
    if run.arm.name == reference and cell.floor_concurrency:
        own = Basis("..", ScoredPositions.concatenate(scored), sha256_hex(raw))
        score_floor(lane, cell, (run.arm.name, tokens), windows, folder=folder, own=own)
    if cell.greedy_prompts:
        prompts = [w[: cell.prompt_tokens] for w in windows[: cell.greedy_prompts]]
        answers = greedy_answers(lane, prompts, cell.greedy_tokens)
        GreedyAnswers(
            arm=run.arm.name, tokens=cell.greedy_tokens, prompts=prompts, answers=answers
        ).write(folder / GREEDY_FILE, replace=True)
    write_scores(
        folder, ScoredArm(cell, run.arm.name, scored, tokens, cell.concurrency), raw, basis
    )
    for kept in (folder / KEPT_DIR, folder / FLOOR_DIR / KEPT_DIR):
        shutil.rmtree(kept, ignore_errors=True)  # scores.npz holds them now


def score_floor(
    lane: ScoringLane,
    cell: FidelityCell,
    reference: tuple[str, list[int]],
    windows: list[list[int]],
    *,
    folder: Path,
    own: Basis,
) -> None:
    """The reference (its name and its ids for the corpus) scored again at the floor's
    concurrency, stored against ``own``: its first scoring's arrays, which ``folder``'s
    scores.npz will hold."""
    concurrency = cell.floor_concurrency
    again = kept_scoring(lane, windows, cell.prompt_logprobs, concurrency, folder / FLOOR_DIR)
    floor = ScoredArm(cell, reference[0], again, reference[1], concurrency)
    write_scores(folder / FLOOR_DIR, floor, arrays_bytes(again, own.positions), own)


def kept_scoring(
    lane: ScoringLane, windows: list[list[int]], k: int, concurrency: int, folder: Path
) -> list[ScoredPositions]:
    """Every window scored: those a killed run kept in ``folder/windows/`` read back, the
    others scored, each kept there the moment it is."""
    kept = folder / KEPT_DIR
    kept.mkdir(parents=True, exist_ok=True)
    have = {i: s for i, w in enumerate(windows) if (s := kept_window(kept, i, w)) is not None}
    missing = [i for i in range(len(windows)) if i not in have]

    def keep(index: int, positions: ScoredPositions) -> None:
        raw = arrays_bytes([positions])
        write_bytes_atomic(kept / f"window-{missing[index]:05d}.npz", raw, replace=True)

    fresh = score_windows(lane, [windows[i] for i in missing], k, concurrency, keep)
    have.update(zip(missing, fresh, strict=True))
    return [have[i] for i in range(len(windows))]


def kept_window(kept: Path, index: int, window: list[int]) -> ScoredPositions | None:
    """Window ``index`` as a killed run kept it, if it kept it whole and of these tokens."""
    path = kept / f"window-{index:05d}.npz"
    try:
        (positions,) = read_arrays(path.read_bytes())
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None  # not kept, or cut short: scored again
    return positions if positions.tokens.tolist() == window[1:] else None


def corpus(cell: FidelityCell) -> str:
    where = f"fidelity cell {cell.id} corpus"
    try:
        data = pinned_bytes(Path(cell.corpus.file), cell.corpus.sha256, where=where)
    except FaceoffError as exc:
        raise LaneRefused("corpus_changed", f"{exc.message}; {exc.fix}") from exc
    return corpus_text(data, cell.corpus.format, cell.corpus.file)


@dataclass(frozen=True)
class Basis:
    """Scores another arm's are stored against (``arrays_bytes``): where they lie, relative
    to that arm's folder, their positions, and the sha256 of their ``scores.npz``."""

    where: str
    positions: ScoredPositions
    sha256: str

    def fits(self, scored: list[ScoredPositions]) -> bool:
        """Whether ``scored`` are the same positions (the same windows of the same ids)."""
        tokens = np.concatenate([s.tokens for s in scored])
        return np.array_equal(tokens, self.positions.tokens)


def reference_basis(
    context: CampaignContext, cell: FidelityCell, arm: str, reference: str, own: str
) -> Basis | None:
    """The reference's scores when it was scored first, for the arm's to be stored against;
    an arm that tokenized the corpus otherwise is refused now, naming both (a reference
    walked later is checked when the comparison is built, and the arm's scores stand alone)."""
    folder = fidelity_folder(context.campaign_dir, cell, reference)
    if not (folder / SCORES_FILE).is_file():
        return None
    meta = FidelityScores.read(folder / SCORES_FILE)
    if meta.tokenizer_sha256 != own:
        raise LaneRefused(
            "tokenizer_differs", tokenizer_sentence(arm, reference, own, meta.tokenizer_sha256)
        )
    raw = (folder / ARRAYS_FILE).read_bytes()
    if meta.stored_against is not None or sha256_hex(raw) != meta.arrays_sha256:
        return None  # not a basis to lean on: the arm's scores stand alone
    positions = ScoredPositions.concatenate(read_arrays(raw))
    return Basis(f"../{reference}", positions, meta.arrays_sha256)


@dataclass(frozen=True)
class ScoredArm:
    """One arm's windows scored, and what ``scores.json`` says of how."""

    cell: FidelityCell
    arm: str
    windows: list[ScoredPositions]
    tokens: list[int]
    concurrency: int


def write_scores(folder: Path, scored: ScoredArm, raw: bytes, basis: Basis | None) -> None:
    """``scores.npz`` (``raw``, stored against ``basis`` if any), then ``scores.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(folder / ARRAYS_FILE, raw, replace=True)
    FidelityScores(
        arm=scored.arm,
        k=scored.cell.prompt_logprobs,
        corpus_sha256=scored.cell.corpus.sha256,
        window_tokens=[s.count + 1 for s in scored.windows],
        concurrency=scored.concurrency,
        tokenizer_sha256=corpus_sha256(scored.tokens),
        arrays_sha256=sha256_hex(raw),
        stored_against=basis.where if basis else None,
        against_sha256=basis.sha256 if basis else None,
    ).write(folder / SCORES_FILE, replace=True)


def adapter(http: Http) -> Post:
    """``workload.fidelity.Post`` over the lanes' HTTP client."""

    def post(url: str, body: dict[str, Any], timeout_s: float) -> Answer:
        reply = http.post_json(url, body, timeout=timeout_s)
        if reply.status is None:
            return Answer(None, None, reply.error or "no answer")
        text = reply.body.decode("utf-8", "replace")
        try:
            parsed = reply.json() if reply.ok else None
        except ValueError:
            return Answer(reply.status, None, f"not JSON: {text[:200]}")
        return Answer(reply.status, parsed, "" if reply.ok else text[:500])

    return post
