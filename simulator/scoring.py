"""A completion's logit-model parts: ``prompt_logprobs`` and the greedy answer.

vLLM returns ``prompt_logprobs`` as one entry per prompt position: ``null`` for the
first (nothing precedes it), else a map from token id (a JSON string) to
``{logprob, rank, decoded_token}`` holding the ``k`` most likely ids and always the
prompt's own token at that position, so a k+1-th entry appears when it is not among
them. ``-1`` asks for the whole vocabulary. A request above the engine's
``--max-logprobs`` is refused with vLLM's words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simulator.logits import Distribution, LogitModel
from simulator.output import OutputPlan
from simulator.protocol import ApiError
from simulator.tokenizer import Tokenizer

LogprobEntry = dict[str, dict[str, Any]] | None


def check_prompt_logprobs(requested: int, max_logprobs: int, vocab_size: int) -> int:
    """The k to return for ``prompt_logprobs = requested``, or vLLM's refusal."""
    k = vocab_size if requested == -1 else requested
    if k < 0:
        raise ApiError(400, f"prompt_logprobs must be ≥ 0 or -1, got {requested}.")
    cap = vocab_size if max_logprobs == -1 else max_logprobs
    if k > cap:
        raise ApiError(
            400,
            f"Requested prompt logprobs of {requested}, which is greater than max allowed: "
            f"{max_logprobs}",
            param="prompt_logprobs",
        )
    return k


def prompt_logprobs(
    model: LogitModel, tokenizer: Tokenizer, prompt: Sequence[int], k: int, nonce: int
) -> list[LogprobEntry]:
    """vLLM's ``prompt_logprobs`` for ``prompt`` (one entry per position)."""
    out: list[LogprobEntry] = [None]
    for position in range(1, len(prompt)):
        dist = model.distribution(prompt[:position], nonce)
        out.append(position_entry(dist, tokenizer, prompt[position], k, model.vocab_size))
    return out


def position_entry(
    dist: Distribution, tokenizer: Tokenizer, actual: int, k: int, vocab_size: int
) -> dict[str, dict[str, Any]]:
    entry = {}
    for token, logprob in dist.top(k, vocab_size):
        entry[str(token)] = logprob_item(tokenizer, token, logprob, dist.rank(token))
    if str(actual) not in entry:
        entry[str(actual)] = logprob_item(
            tokenizer, actual, dist.logprob(actual), dist.rank(actual)
        )
    return entry


def logprob_item(tokenizer: Tokenizer, token: int, logprob: float, rank: int) -> dict[str, Any]:
    text = tokenizer.token_bytes(token).decode("utf-8", "replace")
    return {"logprob": logprob, "rank": rank, "decoded_token": text}


def greedy_plan(
    model: LogitModel, prompt: Sequence[int], max_tokens: int, nonce: int
) -> OutputPlan:
    """A temperature-0 completion: the model's most likely token, ``max_tokens`` times."""
    tokens = model.greedy(prompt, max_tokens, nonce)
    return OutputPlan(
        tokens=tuple(tokens), reasoning_count=0, finish_reason="length", text_kind="prose"
    )
