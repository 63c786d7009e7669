"""The simulated model's next-token distribution: a seeded function of the token history.

After any history the model considers a small set of ``candidates`` token ids (drawn
from the text pieces of the vocabulary, so a greedy answer is always printable), with
Gaussian logits; the rest of the vocabulary shares ``rest_mass`` evenly, so every id has
a finite log-probability, as a real engine's softmax gives it. Both depend only on the
model ``seed`` and the last two tokens: the same history gives the same distribution on
any host, and greedy decoding (temperature 0) is deterministic.

A profile's ``kld`` perturbs the candidates' logits along a seeded direction, scaled at
each position so that KL(reference ‖ perturbed) over the whole vocabulary equals
``kld`` exactly: the reference is the same ``seed`` with ``kld = 0``. The rest bucket is
left as it is in both, so the divergence lives on the candidates, and a top-k reading
that covers them, plus one bucket for the rest, recovers it exactly. ``noise_kld`` adds
a second perturbation of that size whose direction is drawn per request: batch
non-determinism, the noise floor a second scoring of one lane measures.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from simulator.tokenizer import BYTE_BASE

FIRST_TEXT_ID = BYTE_BASE + 256  # ids below are specials and raw bytes
LOGIT_SCALE = 2.0  # the spread of candidate logits: a few likely tokens, a long tail
NEWTON_STEPS = 8


@dataclass(frozen=True)
class LogitSpec:
    """A profile's ``[logits]`` table: the model, its perturbation and the engine's cap."""

    seed: int = 0  # the model: lanes with one seed serve the same reference model
    candidates: int = 16  # ids with a logit of their own after each history
    rest_mass: float = 0.05  # probability shared evenly by every other id
    kld: float = 0.0  # exact KL(reference ‖ this lane) at every position, in nats
    perturbation_seed: int = 1  # the direction of the perturbation
    noise_kld: float = 0.0  # per-request perturbation: batch non-determinism
    max_logprobs: int = 20  # vLLM's --max-logprobs: the largest prompt_logprobs accepted


@dataclass(frozen=True)
class Distribution:
    """Next-token log-probabilities: candidates in descending order, one value for the rest."""

    ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    rest_logprob: float  # each id outside ``ids``

    def logprob(self, token: int) -> float:
        for index, candidate in enumerate(self.ids):
            if candidate == token:
                return self.logprobs[index]
        return self.rest_logprob

    def rank(self, token: int) -> int:
        """vLLM's rank: 1 + how many ids are strictly more likely (ties share a rank)."""
        value = self.logprob(token)
        return 1 + sum(1 for lp in self.logprobs if lp > value)

    def top(self, k: int, vocab_size: int) -> list[tuple[int, float]]:
        """The ``k`` most likely ids; past the candidates, rest ids in ascending order."""
        head = list(zip(self.ids, self.logprobs, strict=True))[:k]
        taken = set(self.ids)
        rest = (i for i in range(vocab_size) if i not in taken)
        while len(head) < min(k, vocab_size):
            head.append((next(rest), self.rest_logprob))
        return head

    def greedy(self) -> int:
        return self.ids[0]


class LogitModel:
    """One lane's model: ``distribution(history, nonce)`` for any token history."""

    def __init__(self, spec: LogitSpec, vocab_size: int) -> None:
        if vocab_size - FIRST_TEXT_ID <= spec.candidates:
            raise ValueError(f"a vocabulary of {vocab_size} ids leaves no rest bucket")
        self.spec = spec
        self.vocab_size = vocab_size
        rest_ids = vocab_size - spec.candidates
        self.rest_logprob = math.log(spec.rest_mass / rest_ids)

    def distribution(self, history: Sequence[int], nonce: int = 0) -> Distribution:
        """What follows ``history``; ``nonce`` draws the request's own noise direction."""
        spec = self.spec
        key = context_key(history)
        rng = random.Random(mix(spec.seed, *key))
        ids = rng.sample(range(FIRST_TEXT_ID, self.vocab_size), spec.candidates)
        logits = [rng.gauss(0.0, LOGIT_SCALE) for _ in ids]
        inner = spec.kld / (1.0 - spec.rest_mass)  # the candidates carry the whole divergence
        if spec.kld > 0:
            logits = perturbed(logits, mix(spec.perturbation_seed, *key), inner)
        if spec.noise_kld > 0:
            noise = spec.noise_kld / (1.0 - spec.rest_mass)
            logits = perturbed(logits, mix(nonce, *key), noise)
        return self._normalised(ids, logits)

    def _normalised(self, ids: list[int], logits: list[float]) -> Distribution:
        top = max(logits)
        log_z = top + math.log(sum(math.exp(x - top) for x in logits))
        shift = math.log1p(-self.spec.rest_mass) - log_z
        ranked = sorted(zip(logits, ids, strict=True), reverse=True)
        return Distribution(
            ids=tuple(i for _, i in ranked),
            logprobs=tuple(x + shift for x, _ in ranked),
            rest_logprob=self.rest_logprob,
        )

    def greedy(self, prompt: Sequence[int], count: int, nonce: int = 0) -> list[int]:
        """``count`` tokens decoded at temperature 0 after ``prompt``."""
        history = list(prompt[-2:])
        out: list[int] = []
        for _ in range(count):
            token = self.distribution(history, nonce).greedy()
            out.append(token)
            history = [*history[-1:], token]
        return out


def context_key(history: Sequence[int]) -> tuple[int, int]:
    """The last two tokens (-1 where the history is shorter): what the model conditions on."""
    padded = [-1, -1, *history[-2:]]
    return padded[-2], padded[-1]


def mix(*parts: int) -> int:
    """One integer seed from several, the same in every process (no salted ``hash``)."""
    value = 0x9E3779B97F4A7C15
    for part in parts:
        value = (value * 1_000_003 + part + 2) % (1 << 64)
    return value


def perturbed(logits: list[float], seed: int, target: float) -> list[float]:
    """``logits`` moved along a seeded direction until KL(p ‖ q) equals ``target``."""
    probs = softmax(logits)
    rng = random.Random(seed)
    raw = [rng.gauss(0.0, 1.0) for _ in logits]
    mean = sum(p * d for p, d in zip(probs, raw, strict=True))
    direction = [d - mean for d in raw]  # centred under p: KL(t) = log E_p[exp(t d)]
    step = solve_step(probs, direction, target)
    return [x + step * d for x, d in zip(logits, direction, strict=True)]


def solve_step(probs: list[float], direction: list[float], target: float) -> float:
    """The t ≥ 0 with log E_p[exp(t d)] = target, by Newton from the quadratic guess.

    With d centred under p the cumulant generating function is convex and increasing
    for t > 0, so Newton from the second-order guess converges in a few steps.
    """
    variance = sum(p * d * d for p, d in zip(probs, direction, strict=True))
    step = math.sqrt(2.0 * target / variance) if variance > 0 else 0.0
    for _ in range(NEWTON_STEPS):
        weights = [p * math.exp(step * d) for p, d in zip(probs, direction, strict=True)]
        total = sum(weights)
        value = math.log(total) - target
        slope = sum(w * d for w, d in zip(weights, direction, strict=True)) / total
        if slope <= 0 or abs(value) < 1e-12:
            break
        step = max(step - value / slope, 0.0)
    return step


def softmax(logits: list[float]) -> list[float]:
    top = max(logits)
    weights = [math.exp(x - top) for x in logits]
    total = sum(weights)
    return [w / total for w in weights]
