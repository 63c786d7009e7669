"""A fidelity cell's requests against a real simulator: windows, scores, greedy, refusals."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evidence.comparison.fidelity.entries import cell_entry
from faceoff.canonical import sha256_hex
from faceoff.formats.fidelity_outcome import GREEDY_FILE, GreedyAnswers
from faceoff.formats.fidelity_scores import (
    SCORES_FILE,
    FidelityScores,
    ScoredPositions,
    arrays_bytes,
)
from flows.campaign.fidelity_run import Basis, ScoredArm, adapter, write_scores
from lanes.http import UrllibHttp
from matrix.fidelity import Corpus, FidelityCell
from simulator.launch import SimServer, running
from workload.fidelity import LaneRefused, ScoringLane, cut_windows, greedy_answers, score_windows

CORPUS = (
    Path(__file__).resolve().parents[2] / "matrix" / "examples" / "data" / "fidelity-corpus.txt"
)


@pytest.fixture(scope="module")
def sims() -> Iterator[tuple[SimServer, SimServer]]:
    """The tiny model, and the same model perturbed by 0.02 nats per position."""
    with running("tiny") as reference, running("tiny", args=["--set", "logits.kld=0.02"]) as arm:
        yield reference, arm


def lane(server: SimServer) -> ScoringLane:
    return ScoringLane(server.url, "sim-tiny", adapter(UrllibHttp()), 60.0)


CELL = FidelityCell(
    id="fid",
    corpus=Corpus(file=str(CORPUS), sha256="0" * 64),
    input_tokens=64,
    windows=8,
    greedy_prompts=3,
    greedy_tokens=8,
)


def test_every_arm_scores_the_references_windows_and_the_known_kld_comes_back(
    sims: tuple[SimServer, SimServer], tmp_path: Path
) -> None:
    reference, arm = lane(sims[0]), lane(sims[1])
    tokens = reference.tokenize(CORPUS.read_text())
    assert tokens == arm.tokenize(CORPUS.read_text())
    windows = cut_windows(tokens, CELL)
    assert [len(w) for w in windows] == [64] * 8 and windows[1][0] == tokens[64]
    basis: Basis | None = None  # the arm's scores are stored against the reference's
    for name, scoring in (("ref", reference), ("arm", arm)):
        scored = score_windows(scoring, windows, 20, concurrency=3)
        raw = arrays_bytes(scored, basis.positions if basis else None)
        write_scores(tmp_path / name, ScoredArm(CELL, name, scored, tokens, 3), raw, basis)
        basis = basis or Basis("../ref", ScoredPositions.concatenate(scored), sha256_hex(raw))
        prompts = [w[: CELL.prompt_tokens] for w in windows[:3]]
        answers = greedy_answers(scoring, prompts, 8)
        assert answers == greedy_answers(scoring, prompts, 8)  # temperature 0 repeats itself
        GreedyAnswers(arm=name, tokens=8, prompts=prompts, answers=answers).write(
            tmp_path / name / GREEDY_FILE
        )
    entry = cell_entry(tmp_path, CELL, "ref", "arm", seed=3)
    assert entry.figures is not None and entry.blocked is None
    assert entry.figures.kld_mean.value == pytest.approx(0.02, rel=0.05)
    assert entry.figures.positions == 8 * 63 and entry.greedy is not None
    assert entry.floor is None and entry.within_floor is None
    assert FidelityScores.read(tmp_path / "arm" / SCORES_FILE).stored_against == "../ref"
    # an arm whose tokenizer gave other ids for the corpus is not compared, both arms named
    meta = FidelityScores.read(tmp_path / "arm" / SCORES_FILE)
    meta.model_copy(update={"tokenizer_sha256": "f" * 64}).write(
        tmp_path / "arm" / SCORES_FILE, replace=True
    )
    refused = cell_entry(tmp_path, CELL, "ref", "arm", seed=3)
    assert refused.figures is None and refused.blocked is not None
    assert "arm 'arm' tokenizes the corpus differently from the reference 'ref'" in refused.blocked


def test_a_k_above_the_engines_cap_is_refused_by_name(sims: tuple[SimServer, SimServer]) -> None:
    with pytest.raises(LaneRefused) as refused:
        lane(sims[0]).score([300, 301, 302], 21)
    assert refused.value.reason == "logprobs_refused"
    assert "greater than max allowed: 20" in refused.value.sentence


def test_a_corpus_too_short_for_its_windows_is_refused_with_the_counts() -> None:
    with pytest.raises(LaneRefused, match="holds 100 tokens on the reference: 1 windows"):
        cut_windows(list(range(100)), CELL)


def test_a_lane_past_the_cells_deadline_is_asked_nothing(sims: tuple[SimServer, SimServer]) -> None:
    late = ScoringLane(sims[0].url, "sim-tiny", adapter(UrllibHttp()), 60.0, deadline=0.0)
    with pytest.raises(LaneRefused) as refused:
        late.tokenize("anything")
    assert refused.value.reason == "deadline"
