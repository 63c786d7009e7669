"""Fidelity cells: cost per 1k scored tokens, a known KLD recovered, the top-k bound's gap.

Three parts, each against a peer measured in the same run:

1. Cost: a simulator lane scores windows of ``--window`` tokens with ``prompt_logprobs =
   20`` (faceoff's own requests, ``workload.fidelity``): seconds per 1,000 scored tokens,
   beside the same windows sent without ``prompt_logprobs`` (the engine's own prefill
   cost: the peer).
2. Storage: ``scores.npz`` bytes per 1,000 scored tokens per arm at k = 20, on the shipped
   corpus and on text the model writes: the reference (standing alone), a candidate 0.02
   nats away and the reference's floor (both stored against the reference), and what a
   50,000-token corpus stores on three arms (the reference and two candidates) and the
   floor; beside the same positions in the v2 form (every arm alone) and the v1 form
   (int32 ids, float32 log-probabilities).
3. Recovery: simulator models perturbed by a known KLD (exact at every position): the
   mean KLD the figures recover at k = 20, and its relative error (target within 5 %).
4. The bound: a model with 64 candidates per position (a long tail), its exact KLD known;
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
from faceoff.formats.fidelity_scores import (
    ScoredPositions,
    arrays_bytes,
    from_prompt_logprobs,
    read_arrays,
)
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
        ours, peer = [], []
        for _ in range(rounds):
            started = time.perf_counter()
            score_windows(lane, windows, 20, 1)
            ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            for w in windows:
                lane.ask("/v1/completions", {"prompt": w, "max_tokens": 1, "temperature": 0})
            peer.append(time.perf_counter() - started)
    per_k = 1000 / scored_tokens
    print(
        f"cost: {len(windows)} windows of {window} tokens, {scored_tokens} scored, {rounds} rounds"
    )
    print(f"  scored (k=20)      {statistics.median(ours) * per_k:8.3f} s per 1k tokens")
    print(f"  peer (no logprobs) {statistics.median(peer) * per_k:8.3f} s per 1k tokens")
    print(f"  ratio              {statistics.median(ours) / statistics.median(peer):8.2f}×")


def storage() -> None:
    """Bytes per 1k scored tokens per arm, and a 50k-token night on three arms and the floor."""
    text = TOKENIZER.encode(CORPUS.read_text())
    shipped = [text[i : i + 128] for i in range(0, len(text) - 128, 128)][:24]
    written = sampled(LogitModel(LogitSpec(seed=1), VOCAB), 16, 128)
    print("storage at k = 20: scores.npz kB per 1k scored tokens, one arm")
    for name, windows in (("shipped corpus", shipped), ("text the model writes", written)):
        sizes = stored_sizes(windows)
        positions = sum(len(w) - 1 for w in windows)
        print(f"  {name}, {len(windows)} windows of 128 tokens, {positions} scored")
        for label, size in sizes.items():
            print(f"    {label:<30} {size / positions:6.1f} kB")
        night = sum(sizes[label] * n for label, n in NIGHT.items()) / positions * 50 / 1000
        v2, v1 = (sizes[f"{v} form, any arm"] / positions * 50 * 4 / 1000 for v in ("v2", "v1"))
        print(f"    50k tokens x 3 arms + floor  {night:5.1f} MB (v2 {v2:.1f} MB, v1 {v1:.1f} MB)")


# a night's arms: the reference, two candidates stored against it, and the floor
NIGHT = {"reference (alone)": 1, "candidate, KLD 0.02 (against)": 2, "floor (against)": 1}


def stored_sizes(windows: list[list[int]]) -> dict[str, int]:
    """scores.npz bytes of each arm's scores of ``windows``, and the older forms'."""
    reference = scores(LogitSpec(seed=1, noise_kld=0.0005), windows, 20)
    basis = ScoredPositions.concatenate(read_arrays(arrays_bytes(reference)))
    candidate = scores(LogitSpec(seed=1, kld=0.02, noise_kld=0.0005), windows, 20)
    floor = scores(LogitSpec(seed=1, noise_kld=0.0005), windows, 20, nonce=1)
    return {
        "reference (alone)": len(arrays_bytes(reference)),
        "candidate, KLD 0.02 (against)": len(arrays_bytes(candidate, basis)),
        "floor (against)": len(arrays_bytes(floor, basis)),
        "v2 form, any arm": len(arrays_bytes(candidate)),
        "v1 form, any arm": len(first_form_bytes(candidate)),
    }


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


def scores(
    spec: LogitSpec, windows: list[list[int]], k: int, nonce: int = 0
) -> list[ScoredPositions]:
    model = LogitModel(spec, VOCAB)
    return [
        from_prompt_logprobs(w, prompt_logprobs(model, TOKENIZER, w, k, nonce), k) for w in windows
    ]


def recovery() -> None:
    windows = sampled(LogitModel(LogitSpec(seed=1), VOCAB), 16, 128)
    reference = scores(LogitSpec(seed=1), windows, 20)
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
    storage()
    recovery()
    bound()


if __name__ == "__main__":
    main()
