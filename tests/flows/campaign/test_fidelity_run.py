"""A run killed while scoring a fidelity cell keeps the windows it had scored; the log says
how each fidelity cell ended on an arm."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from faceoff.formats.fidelity_outcome import BLOCKED_FILE, FidelityBlocked
from faceoff.formats.fidelity_scores import (
    SCORES_FILE,
    FidelityScores,
    ScoredPositions,
    arrays_bytes,
)
from flows.campaign.fidelity_run import KEPT_DIR, Said, ended_as, kept_scoring
from simulator.logits import LogitModel, LogitSpec
from simulator.scoring import prompt_logprobs
from simulator.tokenizer import Tokenizer
from workload.fidelity import Answer, ScoringLane

TOKENIZER = Tokenizer.build()
MODEL = LogitModel(LogitSpec(seed=5), TOKENIZER.vocab_size)
WINDOWS = [[300 + 7 * w + i for i in range(12)] for w in range(6)]


class Killed(BaseException):
    """The run's process killed mid-cell (no handler of the run's catches it)."""


class Engine:
    """An in-process engine answering prompt_logprobs; ``alive`` answers, then the kill."""

    def __init__(self, alive: int) -> None:
        self.alive, self.asked = alive, 0

    def post(self, url: str, body: dict[str, Any], timeout_s: float) -> Answer:
        if self.asked >= self.alive:
            raise Killed
        self.asked += 1
        entries = prompt_logprobs(MODEL, TOKENIZER, body["prompt"], body["prompt_logprobs"], 0)
        return Answer(200, {"choices": [{"prompt_logprobs": entries}]}, "")


def scoring(engine: Engine, folder: Path) -> list[ScoredPositions]:
    lane = ScoringLane("http://engine", "sim", engine.post, 10.0)
    return kept_scoring(lane, WINDOWS, 4, 1, folder)


def test_a_resumed_cell_scores_only_the_windows_the_killed_run_had_not(tmp_path: Path) -> None:
    with pytest.raises(Killed):
        scoring(Engine(alive=4), tmp_path)
    assert len(list((tmp_path / KEPT_DIR).glob("window-*.npz"))) == 4

    resumed = Engine(alive=100)
    found = scoring(resumed, tmp_path)
    assert resumed.asked == 2  # the four kept are read back, not asked again

    whole = scoring(Engine(alive=100), tmp_path / "fresh")
    assert arrays_bytes(found) == arrays_bytes(whole)  # scores.npz as if never killed


def test_a_kept_window_of_other_tokens_is_scored_again(tmp_path: Path) -> None:
    scoring(Engine(alive=100), tmp_path)
    kept = tmp_path / KEPT_DIR
    (kept / "window-00002.npz").write_bytes((kept / "window-00003.npz").read_bytes())
    (kept / "window-00005.npz").write_bytes(b"cut short")
    again = Engine(alive=100)
    scoring(again, tmp_path)
    assert again.asked == 2


def test_the_log_says_how_a_fidelity_cell_ended_on_an_arm(tmp_path: Path) -> None:
    scored, blocked = tmp_path / "ref", tmp_path / "cand"
    FidelityScores(
        arm="ref", k=20, corpus_sha256="c" * 64, window_tokens=[97, 97, 96], concurrency=1,
        tokenizer_sha256="t" * 64, arrays_sha256="a" * 64,
    ).write(scored / SCORES_FILE)  # fmt: skip
    assert ended_as(scored, "corpus", "ref") == Said(
        True, "fidelity corpus on ref: 3 windows, 290 positions scored at k = 20"
    )
    FidelityBlocked(
        arm="cand", reason="tokenizer_differs", sentence="cand's ids differ from ref's"
    ).write(blocked / BLOCKED_FILE)
    assert ended_as(blocked, "corpus", "cand") == Said(
        False, "fidelity corpus on cand: blocked (tokenizer_differs): cand's ids differ from ref's"
    )
