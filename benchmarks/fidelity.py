"""Fidelity cells: cost per 1k scored tokens, a known KLD recovered, the top-k bound's gap.

Three parts, each against a peer measured in the same run:

1. Cost: a simulator lane scores windows of ``--window`` tokens with ``prompt_logprobs =
   20`` (faceoff's own requests, ``workload.fidelity``): seconds and stored bytes
   (``scores.npz``) per 1,000 scored tokens, beside the same windows sent without
   ``prompt_logprobs`` (the engine's own prefill cost: the peer).
2. Recovery: simulator models perturbed by a known KLD (exact at every position): the
   mean KLD the figures recover at k = 20, and its relative error (target within 5 %).
3. The bound: a model with 64 candidates per position (a long tail), its exact KLD known;
   the top-k + rest lower bound as k grows from 1 to 64, as a share of the exact value.
"""

from __future__ import annotations

import argparse
import io
import math
import random
import statistics
import time
from pathlib import Path

import numpy as np

from evidence.stats.fidelity import fidelity_figures
from faceoff.formats.fidelity_scores import ScoredPositions, arrays_bytes, from_prompt_logprobs
from flows.campaign.fidelity_run import adapter
from lanes.http import UrllibHttp
from matrix.fidelity import Corpus, FidelityCell
from simulator.launch import running
from simulator.logits import LogitModel, LogitSpec
from simulator.scoring import prompt_logprobs
from simulator.tokenizer import Tokenizer
from workload.fidelity import ScoringLane, cut_windows, score_windows

CORPUS = Path(__file__).resolve().parents[1] / "matrix/examples/data/fidelity-corpus.txt"
TOKENIZER = Tokenizer.build()
VOCAB = TOKENIZER.vocab_size


def cost(window: int, rounds: int) -> None:
    text = CORPUS.read_text() * 4
    with running("tiny") as sim:
        lane = ScoringLane(sim.url, "sim-tiny", adapter(UrllibHttp()), 120.0)
        tokens = lane.tokenize(text)
        cell = FidelityCell(
            id="bench", corpus=Corpus(file=str(CORPUS), sha256="0" * 64),
            input_tokens=window, windows=len(tokens) // window, greedy_prompts=0,
        )  # fmt: skip
        windows = cut_windows(tokens, cell)
        scored_tokens = sum(len(w) - 1 for w in windows)
        ours, peer, size = [], [], 0
        for _ in range(rounds):
            started = time.perf_counter()
            scored = score_windows(lane, windows, 20, 1)
            ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            for w in windows:
                lane.ask("/v1/completions", {"prompt": w, "max_tokens": 1, "temperature": 0})
            peer.append(time.perf_counter() - started)
            size, peer_size = len(arrays_bytes(scored)), len(first_form_bytes(scored))
    per_k = 1000 / scored_tokens
    print(
        f"cost: {len(windows)} windows of {window} tokens, {scored_tokens} scored, {rounds} rounds"
    )
    print(f"  scored (k=20)      {statistics.median(ours) * per_k:8.3f} s per 1k tokens")
    print(f"  peer (no logprobs) {statistics.median(peer) * per_k:8.3f} s per 1k tokens")
    print(f"  ratio              {statistics.median(ours) / statistics.median(peer):8.2f}×")
    print(f"  scores.npz         {size * per_k / 1000:8.1f} kB per 1k tokens, one arm")
    print(f"  peer (v1 form)     {peer_size * per_k / 1000:8.1f} kB per 1k tokens, one arm")
    print_night(size / scored_tokens, peer_size / scored_tokens)


def print_night(per_position: float, peer_per_position: float) -> None:
    """What a 50,000-token corpus stores on three arms and the reference's floor."""
    night, peer = (b * 50_000 * 4 / 1e6 for b in (per_position, peer_per_position))
    print(f"  50k tokens x 3 arms + floor {night:5.1f} MB (v1 form {peer:.1f} MB)")


def first_form_bytes(windows: list[ScoredPositions]) -> bytes:
    """``scores.npz`` as its first version wrote it: int32 ids, float32 log-probabilities."""
    whole = ScoredPositions.concatenate(windows)
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        tokens=whole.tokens,
        ids=whole.ids,
        logprobs=whole.logprobs.astype(np.float32),
        lengths=np.asarray([w.count for w in windows], dtype=np.int32),
    )
    return buffer.getvalue()


def sampled(model: LogitModel, count: int, length: int) -> list[list[int]]:
    """Text the reference model writes: each token drawn from its distribution."""
    rng, windows = random.Random(3), []
    for _ in range(count):
        window = [rng.randrange(300, VOCAB)]
        while len(window) < length:
            dist = model.distribution(window)
            window.append(rng.choices(dist.ids, [math.exp(lp) for lp in dist.logprobs])[0])
        windows.append(window)
    return windows


def scores(spec: LogitSpec, windows: list[list[int]], k: int) -> list[ScoredPositions]:
    model = LogitModel(spec, VOCAB)
    return [
        from_prompt_logprobs(w, prompt_logprobs(model, TOKENIZER, w, k, nonce=0), k)
        for w in windows
    ]


def recovery() -> None:
    windows = sampled(LogitModel(LogitSpec(seed=1), VOCAB), 16, 128)
    reference = scores(LogitSpec(seed=1), windows, 20)
    positions = sum(w.count for w in reference)
    size, peer = (len(f(reference)) / positions for f in (arrays_bytes, first_form_bytes))
    print(f"stored, text the model writes: {size:.1f} B a position (v1 form {peer:.1f})")
    print_night(size, peer)
    print("recovery at k = 20 (16 windows of 128 tokens)")
    for kld in (0.002, 0.02, 0.1, 0.5):
        found = fidelity_figures(reference, scores(LogitSpec(seed=1, kld=kld), windows, 20), seed=1)
        error = found.kld_mean.value / kld - 1
        print(f"  known {kld:<6} recovered {found.kld_mean.value:.6f}  error {error:+.2%}")


def wide(kld: float = 0.0) -> LogitSpec:
    return LogitSpec(seed=2, candidates=64, max_logprobs=-1, kld=kld)


def bound() -> None:
    windows = sampled(LogitModel(wide(), VOCAB), 8, 96)
    print("top-k + rest lower bound, 64 candidates per position, exact KLD 0.05")
    for k in (1, 2, 4, 8, 16, 32, 64):
        reference = scores(wide(), windows, k)
        arm = scores(wide(0.05), windows, k)
        found = fidelity_figures(reference, arm, seed=1).kld_mean.value
        print(f"  k = {k:<3} bound {found:.5f}  {found / 0.05:6.1%} of the exact value")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=512, help="tokens per window")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the cost part")
    args = parser.parse_args()
    cost(args.window, args.rounds)
    recovery()
    bound()


if __name__ == "__main__":
    main()
