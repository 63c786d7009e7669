"""The simulated model's logits: determinism, the exact perturbation, vLLM's prompt_logprobs."""

from __future__ import annotations

import math
import random

import pytest

from simulator.logits import LogitModel, LogitSpec
from simulator.protocol import ApiError, parse_completion
from simulator.scoring import check_prompt_logprobs, prompt_logprobs
from simulator.tokenizer import Tokenizer

TOKENIZER = Tokenizer.build()
VOCAB = TOKENIZER.vocab_size


def full_kld(reference: LogitModel, lane: LogitModel, history: list[int]) -> float:
    """KL(reference ‖ lane) over the whole vocabulary, the rest ids summed in closed form."""
    p, q = reference.distribution(history), lane.distribution(history)
    total = sum(math.exp(lp) * (lp - q.logprob(t)) for t, lp in zip(p.ids, p.logprobs, strict=True))
    outside = [t for t in q.ids if t not in p.ids]
    total += sum(math.exp(p.rest_logprob) * (p.rest_logprob - q.logprob(t)) for t in outside)
    rest_ids = VOCAB - len(set(p.ids) | set(q.ids))
    return total + rest_ids * math.exp(p.rest_logprob) * (p.rest_logprob - q.rest_logprob)


def histories(count: int) -> list[list[int]]:
    rng = random.Random(7)
    return [[rng.randrange(300, VOCAB) for _ in range(rng.randrange(1, 5))] for _ in range(count)]


def test_a_history_gives_one_normalised_distribution_on_every_model_instance() -> None:
    a, b = LogitModel(LogitSpec(seed=3), VOCAB), LogitModel(LogitSpec(seed=3), VOCAB)
    for history in histories(20):
        dist = a.distribution(history)
        assert dist == b.distribution(history)
        mass = sum(math.exp(lp) for lp in dist.logprobs) + (VOCAB - 16) * math.exp(
            dist.rest_logprob
        )
        assert mass == pytest.approx(1.0, abs=1e-9)
        assert list(dist.logprobs) == sorted(dist.logprobs, reverse=True)
    assert a.distribution([5, 6]) != LogitModel(LogitSpec(seed=4), VOCAB).distribution([5, 6])


@pytest.mark.parametrize("kld", [0.002, 0.02, 0.2])
def test_the_perturbation_has_the_declared_kld_at_every_position(kld: float) -> None:
    reference = LogitModel(LogitSpec(seed=1), VOCAB)
    lane = LogitModel(LogitSpec(seed=1, kld=kld), VOCAB)
    for history in histories(30):
        assert full_kld(reference, lane, history) == pytest.approx(kld, rel=1e-6)


def test_greedy_decoding_is_deterministic_and_follows_the_most_likely_token() -> None:
    model = LogitModel(LogitSpec(seed=2), VOCAB)
    prompt = TOKENIZER.encode("The lane answered")
    tokens = model.greedy(prompt, 12)
    assert tokens == model.greedy(prompt, 12)
    assert tokens[0] == model.distribution(prompt).ids[0]
    assert tokens[1] == model.distribution([*prompt, tokens[0]]).ids[0]
    assert "\ufffd" not in TOKENIZER.decode(tokens)


def test_noise_differs_per_request_and_is_absent_without_it() -> None:
    noisy = LogitModel(LogitSpec(seed=2, noise_kld=0.01), VOCAB)
    assert noisy.distribution([9, 10], nonce=1) != noisy.distribution([9, 10], nonce=2)
    clean = LogitModel(LogitSpec(seed=2), VOCAB)
    assert clean.distribution([9, 10], nonce=1) == clean.distribution([9, 10], nonce=2)


def test_prompt_logprobs_hold_the_top_k_and_always_the_prompts_own_token() -> None:
    model = LogitModel(LogitSpec(seed=5), VOCAB)
    prompt = TOKENIZER.encode("Hello world, the model server is fast.")
    out = prompt_logprobs(model, TOKENIZER, prompt, 3, nonce=0)
    assert out[0] is None and len(out) == len(prompt)
    for position, entry in enumerate(out[1:], start=1):
        assert entry is not None and str(prompt[position]) in entry
        assert len(entry) in (3, 4)
        ranks = sorted(item["rank"] for item in entry.values())
        assert ranks[:3] == [1, 2, 3]
        own = entry[str(prompt[position])]
        assert own["logprob"] == model.distribution(prompt[:position]).logprob(prompt[position])
        assert own["decoded_token"] == TOKENIZER.token_bytes(prompt[position]).decode()


def test_prompt_logprobs_above_the_engines_cap_are_refused_as_vllm_words_it() -> None:
    assert check_prompt_logprobs(20, 20, VOCAB) == 20
    assert check_prompt_logprobs(-1, -1, VOCAB) == VOCAB
    with pytest.raises(ApiError, match="greater than max allowed: 20"):
        check_prompt_logprobs(21, 20, VOCAB)
    with pytest.raises(ApiError, match="greater than max allowed: 20"):
        check_prompt_logprobs(-1, 20, VOCAB)


@pytest.mark.parametrize(("k", "refused"), [(5, True), (-1, True), (0, False), (None, False)])
def test_a_streamed_completion_asking_prompt_logprobs_is_refused_as_vllm_refuses_it(
    k: int | None, refused: bool
) -> None:
    body = {"prompt": [300, 301, 302], "stream": True, "prompt_logprobs": k}
    if not refused:
        assert parse_completion(body, TOKENIZER).prompt_logprobs == k
        return
    with pytest.raises(ApiError, match="`prompt_logprobs` are not available when `stream=True`"):
        parse_completion(body, TOKENIZER)
    assert parse_completion({**body, "stream": False}, TOKENIZER).prompt_logprobs == k
