"""Hit an actual-token target by searching the filler length against ``/tokenize``.

Token count grows (almost) linearly with filler words, so a secant search lands
within a few tokens in two or three round trips; the rate learned on one request
starts the next one, so most requests of a cell need one or two. That matters at
the capacity edge, where each round trip carries ~1.5 MB of text and the lane
tokenizes ~300K tokens: before the first long prompt of a cell, the rate is
measured on two small prompts sent together (no document, and a short one), so the
first long guess lands within about 1 % and one correction finishes it, instead of
a guess from a default rate that may be off by half (and overshoot the context).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from faceoff.errors import FaceoffError
from workload.prompts import Prompt
from workload.tokenizer import TokenCount, Tokenizer

MAX_ROUND_TRIPS = 8
# A target this many words past the scaffold (at the rate in hand) is long enough that
# measuring the rate first on small prompts saves a long round trip; the probe's length.
CALIBRATE_ABOVE_WORDS = 16_384
CALIBRATION_WORDS = 2_048


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
    measured: bool = False  # learned on this lane's tokenizer, not the defaults

    def words_for(self, target: int) -> int:
        return max(0, round((target - self.scaffold_tokens) / self.tokens_per_word))

    def learn(self, fit: Fit, slope: float | None) -> None:
        if slope is not None and slope > 0:
            self.tokens_per_word = slope
        if fit.filler_words > 0:
            self.scaffold_tokens = fit.tokens.count - self.tokens_per_word * fit.filler_words
            self.measured = True

    def needs_calibration(self, target: int) -> bool:
        return not self.measured and self.words_for(target) > CALIBRATE_ABOVE_WORDS


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
    if rate.needs_calibration(target):
        await calibrate(build, tokenizer, template_kwargs=template_kwargs, rate=rate)
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


async def calibrate(
    build: Callable[[int], Prompt],
    tokenizer: Tokenizer,
    *,
    template_kwargs: dict[str, Any] | None,
    rate: Rate,
) -> None:
    """Measure the scaffold (no document) and tokens per word (a short document) on the
    lane's tokenizer, both asked at once: two small round trips in the time of one."""
    empty, short = build(0), build(CALIBRATION_WORDS)
    scaffold, probe = await asyncio.gather(
        tokenizer.tokenize(empty.messages, template_kwargs),
        tokenizer.tokenize(short.messages, template_kwargs),
    )
    slope = (probe.count - scaffold.count) / CALIBRATION_WORDS
    if slope > 0:  # else the search starts from the defaults, as before; asked once either way
        rate.tokens_per_word, rate.scaffold_tokens = slope, float(scaffold.count)
    rate.measured = True


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
