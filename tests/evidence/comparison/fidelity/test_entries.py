"""A fidelity cell's folder read back: arms stored against the reference, partial scoring."""

from __future__ import annotations

from pathlib import Path

import pytest

from evidence.comparison.fidelity.entries import (
    cell_entry,
    partial_scoring,
    read_scores,
    scored_leftovers,
)
from faceoff.canonical import sha256_hex
from faceoff.formats.fidelity_outcome import FIDELITY_DIR, FLOOR_DIR, KEPT_DIR
from faceoff.formats.fidelity_scores import (
    ARRAYS_FILE,
    SCORES_FILE,
    FidelityScores,
    ScoredPositions,
    arrays_bytes,
    from_prompt_logprobs,
)
from flows.campaign.fidelity_run import Basis, ScoredArm, block, write_scores
from matrix.fidelity import Corpus, FidelityCell
from simulator.logits import LogitModel, LogitSpec
from simulator.scoring import prompt_logprobs
from simulator.tokenizer import Tokenizer

TOKENIZER = Tokenizer.build()
WINDOWS = [[300 + 11 * w + i for i in range(16)] for w in range(5)]
TOKENS = [t for w in WINDOWS for t in w]
CELL = FidelityCell(
    id="fid", corpus=Corpus(file="corpus.txt", sha256="0" * 64), input_tokens=16, windows=5
)


def scored(kld: float) -> list[ScoredPositions]:
    model = LogitModel(LogitSpec(seed=6, kld=kld), TOKENIZER.vocab_size)
    return [
        from_prompt_logprobs(w, prompt_logprobs(model, TOKENIZER, w, 4, nonce=0), 4)
        for w in WINDOWS
    ]


def scored_reference(base: Path) -> Basis:
    windows = scored(0.0)
    raw = arrays_bytes(windows)
    own = Basis("..", ScoredPositions.concatenate(windows), sha256_hex(raw))
    again = scored(0.0)  # the floor, stored against the reference
    floor = ScoredArm(CELL, "ref", again, TOKENS, 4)
    write_scores(base / "ref" / FLOOR_DIR, floor, arrays_bytes(again, own.positions), own)
    write_scores(base / "ref", ScoredArm(CELL, "ref", windows, TOKENS, 1), raw, None)
    return Basis("../ref", own.positions, own.sha256)


def kept(folder: Path, count: int) -> None:
    (folder / KEPT_DIR).mkdir(parents=True)
    for index in range(count):
        raw = arrays_bytes(scored(0.02)[index : index + 1])
        (folder / KEPT_DIR / f"window-{index:05d}.npz").write_bytes(raw)


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / FIDELITY_DIR / CELL.id


def test_an_arm_stored_against_a_reference_that_changed_is_refused(base: Path) -> None:
    basis = scored_reference(base)
    windows = scored(0.02)
    write_scores(
        base / "arm",
        ScoredArm(CELL, "arm", windows, TOKENS, 1),
        arrays_bytes(windows, basis.positions),
        basis,
    )
    entry = cell_entry(base, CELL, "ref", "arm", seed=1)
    assert entry.figures is not None and entry.floor is not None
    assert entry.floor.value == 0.0 and entry.partial == []
    other = arrays_bytes(scored(0.5))  # the reference's arrays replaced, and pinned anew
    (base / "ref" / ARRAYS_FILE).write_bytes(other)
    meta = FidelityScores.read(base / "ref" / SCORES_FILE)
    meta.model_copy(update={"arrays_sha256": sha256_hex(other)}).write(
        base / "ref" / SCORES_FILE, replace=True
    )
    with pytest.raises(ValueError, match=r"is stored against .*which is not the file it pinned"):
        read_scores(base / "arm")


def test_a_blocked_arms_kept_windows_are_partial_scoring_named_in_its_entry(base: Path) -> None:
    scored_reference(base)
    kept(base / "arm", 3)
    block(base / "arm", "arm", "deadline", "the cell's deadline_s passed")
    entry = cell_entry(base, CELL, "ref", "arm", seed=1)
    assert entry.figures is None and entry.blocked == "arm deadline: the cell's deadline_s passed"
    assert entry.partial == [f"fidelity/fid/arm/windows/window-0000{i}.npz" for i in range(3)]
    (note,) = partial_scoring([entry, entry])  # one note a folder
    assert note.startswith("partial scoring: fidelity/fid/arm holds 3 windows of a scoring")
    assert "(arm deadline: the cell's deadline_s passed)" in note


def test_a_run_that_ended_while_scoring_says_so_and_keeps_its_windows(base: Path) -> None:
    scored_reference(base)
    kept(base / "arm", 2)
    entry = cell_entry(base, CELL, "ref", "arm", seed=1)
    assert entry.blocked == "arm not scored: the run ended while it was scored (2 windows kept)"
    assert len(entry.partial) == 2 and scored_leftovers(base.parent.parent) == []


def test_only_the_windows_a_scored_arm_holds_are_leftovers(base: Path) -> None:
    scored_reference(base)
    kept(base / "ref", 1)
    kept(base / "ref" / FLOOR_DIR, 1)
    kept(base / "arm", 1)  # not scored: partial scoring, kept
    root = base.parent.parent
    assert scored_leftovers(root) == [base / "ref" / FLOOR_DIR / KEPT_DIR, base / "ref" / KEPT_DIR]
