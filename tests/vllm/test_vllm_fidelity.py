"""Fidelity on the real engine: the tiny model in float32 against bfloat16, and n-gram speculation.

One module, its engines started once: float32 (the reference, scored twice for the noise
floor), bfloat16 (a lossy change: its KLD must stand above the floor, its interval clear of
zero) and float32 with n-gram speculation (a lossless change: its greedy answers must agree
with the plain engine's). The requests are faceoff's own (``workload.fidelity``), the files
its formats, the figures its comparison entries.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import pytest

from evidence.comparison.fidelity.entries import cell_entry
from evidence.stats.fidelity import greedy_agreement
from faceoff.canonical import sha256_hex
from faceoff.formats.bundle.fidelity_entries import FidelityEntry
from faceoff.formats.fidelity_outcome import FLOOR_DIR, GREEDY_FILE, GreedyAnswers
from faceoff.formats.fidelity_scores import ScoredPositions, arrays_bytes
from flows.campaign.fidelity_run import Basis, ScoredArm, adapter, write_scores
from lanes.http import UrllibHttp
from matrix.fidelity import Corpus, FidelityCell
from tests.vllm.engine import SERVED, Serving, serving
from workload.fidelity import ScoringLane, cut_windows, greedy_answers, score_windows

# Log-probabilities and greedy tokens, no clock: a busy host slows it and changes no figure.
pytestmark = [pytest.mark.vllm, pytest.mark.engine_untimed]

CORPUS = Path(__file__).resolve().parents[2] / "matrix/examples/data/fidelity-corpus.txt"
NGRAM = json.dumps(
    {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4,
     "prompt_lookup_min": 2}
)  # fmt: skip
CELL = FidelityCell(
    id="fid",
    corpus=Corpus(file=str(CORPUS), sha256="0" * 64),
    input_tokens=128,
    windows=8,
    greedy_prompts=4,
    greedy_tokens=24,
)
ENGINES = {"f32": (), "bf16": ("--dtype", "bfloat16"), "ngram": ("--speculative-config", NGRAM)}


@pytest.fixture(scope="module")
def engines(
    tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Serving]]:
    """The three engines, started together (each waits on its own imports)."""
    logs = tmp_path_factory.mktemp("engines")
    with ExitStack() as stack, ThreadPoolExecutor(len(ENGINES)) as pool:
        started = {
            name: pool.submit(stack.enter_context, serving(tiny_model, logs / f"{name}.log", *args))
            for name, args in ENGINES.items()
        }
        yield {name: future.result() for name, future in started.items()}


@pytest.fixture(scope="module")
def scored(engines: dict[str, Serving], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each engine's scores and greedy answers in a fidelity folder, as a campaign writes them."""
    base = tmp_path_factory.mktemp("fidelity")
    lanes = {
        name: ScoringLane(e.url, SERVED, adapter(UrllibHttp()), 600.0)
        for name, e in engines.items()
    }
    tokens = lanes["f32"].tokenize(CORPUS.read_text())
    windows = cut_windows(tokens, CELL)
    prompts = [w[: CELL.prompt_tokens] for w in windows[: CELL.greedy_prompts]]
    basis: Basis | None = None  # the reference's (f32, scored first): bf16 stored against it
    for name, lane in lanes.items():
        if name != "ngram":
            found = score_windows(lane, windows, CELL.prompt_logprobs, 1)
            raw = arrays_bytes(found, basis.positions if basis else None)
            write_scores(base / name, ScoredArm(CELL, name, found, tokens, 1), raw, basis)
            basis = basis or Basis("../f32", ScoredPositions.concatenate(found), sha256_hex(raw))
        answers = greedy_answers(lane, prompts, CELL.greedy_tokens)
        GreedyAnswers(arm=name, tokens=CELL.greedy_tokens, prompts=prompts, answers=answers).write(
            base / name / GREEDY_FILE
        )
    assert basis is not None
    again = score_windows(lanes["f32"], windows, CELL.prompt_logprobs, 4)
    floor = ScoredArm(CELL, "f32", again, tokens, 4)
    against = Basis("..", basis.positions, basis.sha256)
    write_scores(base / "f32" / FLOOR_DIR, floor, arrays_bytes(again, basis.positions), against)
    return base


def entry(base: Path, arm: str) -> FidelityEntry:
    found = cell_entry(base, CELL, "f32", arm, seed=17)
    print(found.model_dump_json(indent=1))  # the figures docs/testing.md quotes
    return found


def test_bfloat16_stands_above_the_float32_floor_with_an_interval_clear_of_zero(
    scored: Path,
) -> None:
    bf16 = entry(scored, "bf16")
    assert bf16.figures is not None and bf16.floor is not None
    assert bf16.figures.kld_mean.low > 0.0
    assert bf16.floor.high < bf16.figures.kld_mean.low and bf16.within_floor is False
    assert bf16.figures.positions == CELL.windows * (CELL.input_tokens - 1)


def test_ngram_speculation_agrees_with_the_plain_engine_at_temperature_zero(scored: Path) -> None:
    plain, ngram = (GreedyAnswers.read(scored / arm / GREEDY_FILE) for arm in ("f32", "ngram"))
    agreement = greedy_agreement(plain.answers, ngram.answers, CELL.greedy_tokens)
    print(agreement)  # the figures docs/testing.md quotes
    assert agreement.identical_share.value >= 0.75
