"""Hit an actual-token target by searching the filler length against ``/tokenize``.

Token count grows (almost) linearly with filler words, so a secant search lands
within a few tokens in two or three round trips; the rate learned on one request
starts the next one, so most requests of a cell need one or two. That matters at
the capacity edge, where each round trip carries ~1.5 MB of text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from faceoff.errors import FaceoffError
from workload.prompts import Prompt
from workload.tokenizer import TokenCount, Tokenizer

MAX_ROUND_TRIPS = 8


@dataclass(frozen=True)
class Fit:
    filler_words: int
    prompt: Prompt
    tokens: TokenCount


@dataclass
class Rate:
    """Tokens per filler word and scaffold tokens, learned as requests are fitted."""

    tokens_per_word: float = 1.4
    scaffold_tokens: float = 80.0

    def words_for(self, target: int) -> int:
        return max(0, round((target - self.scaffold_tokens) / self.tokens_per_word))

    def learn(self, fit: Fit, slope: float | None) -> None:
        if slope is not None and slope > 0:
            self.tokens_per_word = slope
        if fit.filler_words > 0:
            self.scaffold_tokens = fit.tokens.count - self.tokens_per_word * fit.filler_words


def precision(target: int) -> int:
    """How close is close enough: 2 tokens, or 0.05 % of large targets."""
    return max(2, round(target * 0.0005))


async def fit_filler(
    build: Callable[[int], Prompt],
    target: int,
    tokenizer: Tokenizer,
    *,
    template_kwargs: dict[str, Any] | None,
    rate: Rate,
    where: str,
) -> Fit:
    """The filler length whose prompt tokenizes closest to ``target``."""
    tried: dict[int, Fit] = {}
    words, slope = rate.words_for(target), None
    previous: Fit | None = None
    for _ in range(MAX_ROUND_TRIPS):
        prompt = build(words)
        current = Fit(words, prompt, await tokenizer.tokenize(prompt.messages, template_kwargs))
        tried[words] = current
        error = target - current.tokens.count
        if abs(error) <= precision(target):
            break
        slope = _slope(previous, current) or slope or rate.tokens_per_word
        words = max(0, words + (round(error / slope) or (1 if error > 0 else -1)))
        if words in tried:
            break
        previous = current
    best = min(tried.values(), key=lambda f: (abs(target - f.tokens.count), f.tokens.count))
    _check_reachable(best, target, where)
    rate.learn(best, slope)
    return best


def _slope(a: Fit | None, b: Fit) -> float | None:
    if a is None or a.filler_words == b.filler_words:
        return None
    slope = (b.tokens.count - a.tokens.count) / (b.filler_words - a.filler_words)
    return slope if slope > 0 else None


def _check_reachable(best: Fit, target: int, where: str) -> None:
    if best.filler_words == 0 and best.tokens.count > target + precision(target):
        raise FaceoffError(
            f"input target {target} tokens is below the prompt scaffold "
            f"({best.tokens.count} tokens with no document)",
            where=where,
            fix=f"raise input_tokens to at least {best.tokens.count}",
        )
