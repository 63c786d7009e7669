"""Fidelity figures from prompt logprobs: the top-k lower bound, the known simulator KLD."""

from __future__ import annotations

import io
import itertools
import json
import math
import random
from dataclasses import replace

import numpy as np
import pytest

from evidence.stats.divergence import position_klds, same_top1, top_delta_p
from evidence.stats.fidelity import (
    FigureInterval,
    WindowSums,
    bootstrap_mean,
    clopper_pearson,
    fidelity_figures,
    first_divergence,
    greedy_agreement,
    lognormal_mean,
    within_floor,
    woodruff_quantile,
)
from faceoff.formats.fidelity_scores import (
    LOGPROB_STEP,
    PAD_ID,
    SCORES_VERSION,
    FidelityScores,
    ScoredPositions,
    ScoresError,
    arrays_bytes,
    from_prompt_logprobs,
    matching_columns,
    read_arrays,
)
from simulator.logits import LogitModel, LogitSpec
from simulator.scoring import prompt_logprobs
from simulator.tokenizer import Tokenizer

TOKENIZER = Tokenizer.build()
VOCAB = TOKENIZER.vocab_size


def entry(probs: list[float], token: int, k: int) -> dict[str, dict[str, object]]:
    """vLLM's entry for one position of a small vocabulary: top k and the token."""
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    keep = [*order[:k], token] if token not in order[:k] else order[:k]
    return {
        str(i): {"logprob": math.log(probs[i]), "rank": order.index(i) + 1, "decoded_token": "x"}
        for i in keep
    }


def scored(rows: list[list[float]], tokens: list[int], k: int) -> ScoredPositions:
    entries = [None, *(entry(p, t, k) for p, t in zip(rows, tokens[1:], strict=True))]
    return from_prompt_logprobs(tokens, entries, k)


P = [[0.5, 0.2, 0.15, 0.1, 0.05], [0.1, 0.6, 0.1, 0.1, 0.1]]
Q = [[0.3, 0.3, 0.2, 0.1, 0.1], [0.1, 0.5, 0.2, 0.1, 0.1]]
TOKENS = [0, 3, 4]


def exact(p: list[float], q: list[float]) -> float:
    return sum(a * math.log(a / b) for a, b in zip(p, q, strict=True))


def test_k_covering_the_vocabulary_gives_the_exact_kld() -> None:
    klds = position_klds(scored(P, TOKENS, 5), scored(Q, TOKENS, 5))
    assert klds.tolist() == pytest.approx([exact(P[0], Q[0]), exact(P[1], Q[1])], rel=1e-9)
    whole = fidelity_figures([scored(P, TOKENS, 5)], [scored(Q, TOKENS, 5)], seed=1)
    assert (
        whole.exact
        and not fidelity_figures([scored(P, TOKENS, 4)], [scored(Q, TOKENS, 4)], seed=1).exact
    )


def test_a_smaller_k_is_a_lower_bound_that_rises_with_k() -> None:
    bounds = [position_klds(scored(P, TOKENS, k), scored(Q, TOKENS, k)) for k in range(1, 6)]
    full = np.asarray([exact(P[0], Q[0]), exact(P[1], Q[1])])
    for low, high in itertools.pairwise(bounds):
        assert np.all(low <= high + 1e-12)
    assert np.all(bounds[0] <= full) and bounds[-1] == pytest.approx(full)


def test_top1_and_delta_p_of_the_references_top_token() -> None:
    reference, arm = scored(P, TOKENS, 2), scored(Q, TOKENS, 2)
    assert same_top1(reference, arm).tolist() == [True, True]  # 0.3 ties go to the lower id
    assert top_delta_p(reference, arm).tolist() == pytest.approx([0.3 - 0.5, 0.5 - 0.6])


def test_an_arm_scoring_other_tokens_is_refused() -> None:
    with pytest.raises(ValueError, match="same token ids"):
        position_klds(scored(P, TOKENS, 2), scored(Q, [0, 3, 2], 2))
    with pytest.raises(ScoresError, match="no logprob for the prompt's token"):
        from_prompt_logprobs([0, 1], [None, {"2": {"logprob": -1.0, "rank": 1}}], 1)


def simulated(spec: LogitSpec, windows: list[list[int]], k: int) -> list[ScoredPositions]:
    model = LogitModel(spec, VOCAB)
    return [
        from_prompt_logprobs(w, prompt_logprobs(model, TOKENIZER, w, k, nonce=0), k)
        for w in windows
    ]


def corpus_windows(count: int, length: int, seed: int = 4) -> list[list[int]]:
    """Text the reference model would write: each token drawn from its distribution."""
    model, rng = LogitModel(LogitSpec(seed=seed), VOCAB), random.Random(11)
    windows = []
    for _ in range(count):
        window = [rng.randrange(300, VOCAB)]
        while len(window) < length:
            dist = model.distribution(window)
            weights = [math.exp(lp) for lp in dist.logprobs]
            window.append(rng.choices(dist.ids, weights)[0])
        windows.append(window)
    return windows


def test_a_known_simulator_kld_is_recovered_within_5_percent() -> None:
    windows = corpus_windows(12, 64)
    reference = simulated(LogitSpec(seed=4), windows, 20)
    arm = simulated(LogitSpec(seed=4, kld=0.03), windows, 20)
    figures = fidelity_figures(reference, arm, seed=1)
    assert figures.kld_mean.value == pytest.approx(0.03, rel=0.05)
    assert figures.kld_mean.low <= figures.kld_mean.value <= figures.kld_mean.high
    # on text the reference writes, ln(PPL ratio) estimates the same divergence, noisily
    assert 0.0 < figures.ln_ppl_ratio.low < figures.ln_ppl_ratio.value < 0.1
    assert figures.positions == 12 * 63 and figures.windows == 12 and not figures.exact
    top1, p99 = figures.top1_agreement, figures.kld_p99
    assert 0.5 < top1.low <= top1.value <= top1.high < 1.0
    assert figures.kld_median <= p99.low <= p99.value <= p99.high <= figures.kld_max
    narrow = simulated(LogitSpec(seed=4, kld=0.03), windows, 4)
    low = fidelity_figures(simulated(LogitSpec(seed=4), windows, 4), narrow, seed=1)
    assert low.kld_mean.value < figures.kld_mean.value


def test_an_arm_against_itself_has_no_divergence_and_a_perplexity_ratio_of_one() -> None:
    windows = corpus_windows(6, 32)
    reference = simulated(LogitSpec(seed=2), windows, 5)
    figures = fidelity_figures(reference, reference, seed=3)
    assert figures.kld_max == 0.0 and figures.top1_agreement == FigureInterval(1.0, 1.0, 1.0)
    assert figures.ln_ppl_ratio == FigureInterval(0.0, 0.0, 0.0) and figures.ppl_ratio == 1.0
    assert figures.ppl_reference == figures.ppl_arm > 1.0
    assert figures.delta_p_mean == 0.0


def test_noise_between_two_scorings_sits_at_the_floor() -> None:
    windows = corpus_windows(10, 48)
    noisy = LogitSpec(seed=2, noise_kld=0.004)
    model = LogitModel(noisy, VOCAB)
    first, second = (
        [from_prompt_logprobs(w, prompt_logprobs(model, TOKENIZER, w, 20, n), 20) for w in windows]
        for n in (1, 2)
    )
    floor = fidelity_figures(first, second, seed=5).kld_mean
    far = simulated(LogitSpec(seed=2, kld=0.05), windows, 20)
    assert within_floor(floor, floor)
    assert not within_floor(fidelity_figures(first, far, seed=5).kld_mean, floor)


def test_greedy_agreement_counts_tokens_to_the_first_divergence() -> None:
    reference = [[1, 2, 3, 4], [1, 2, 3, 4], [5, 6, 7, 8]]
    arm = [[1, 2, 3, 4], [1, 9, 3, 4], [5, 6, 7]]
    agreement = greedy_agreement(reference, arm, 4)
    assert agreement.median_tokens_to_divergence == 3.0
    assert agreement.identical_share.value == 1 / 3
    assert first_divergence([1], [2], 4) == 0


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        (10, 10, 0.6915, 1.0),
        (0, 10, 0.0, 0.3085),
        (5, 10, 0.1871, 0.8129),
        (45, 50, 0.7819, 0.9667),
    ],
)
def test_greedy_agreement_has_the_exact_binomial_interval(
    successes: int, trials: int, low: float, high: float
) -> None:
    """Clopper–Pearson's published ends: a share of identical prompts is met or failed only
    where so few or so many identical answers would be rare on the limit."""
    found = clopper_pearson(successes, trials)
    assert found.low == pytest.approx(low, abs=1e-4) and found.high == pytest.approx(high, abs=1e-4)


def test_scores_survive_the_compact_arrays_within_half_a_step() -> None:
    windows = simulated(LogitSpec(seed=3), corpus_windows(3, 20), 6)
    back = read_arrays(arrays_bytes(windows))
    assert [w.count for w in back] == [19, 19, 19]
    for ours, theirs in zip(windows, back, strict=True):
        assert np.array_equal(ours.ids, theirs.ids) and np.array_equal(ours.tokens, theirs.tokens)
        padded = np.isinf(ours.logprobs)
        assert np.array_equal(padded, np.isinf(theirs.logprobs))
        error = np.abs(ours.logprobs[~padded] - theirs.logprobs[~padded])
        assert error.max() <= LOGPROB_STEP / 2


def test_ids_of_a_large_vocabulary_keep_their_width() -> None:
    wide = ScoredPositions(
        tokens=np.asarray([70_000, 5], dtype=np.int32),
        ids=np.asarray([[151_935, 70_000], [5, PAD_ID]], dtype=np.int32),
        logprobs=np.asarray([[-0.1, -3.0], [-0.01, -math.inf]]),
    )
    (back,) = read_arrays(arrays_bytes([wide]))
    assert np.array_equal(back.ids, wide.ids) and np.array_equal(back.tokens, wide.tokens)
    assert back.logprobs[1, 1] == -math.inf and back.logprobs[0, 1] == -3.0


def test_figures_from_the_stored_form_stay_within_the_stated_tolerance() -> None:
    """What the comparison and the audit compute (from scores.npz) against the engine's
    float64 answers: KLD within 1e-5 nats, ln PPL ratio within 1e-4, top-1 the same."""
    windows = corpus_windows(6, 40)
    reference, arm = (simulated(LogitSpec(seed=4, kld=kld), windows, 20) for kld in (0.0, 0.02))
    exact = fidelity_figures(reference, arm, seed=2)
    stored = fidelity_figures(*(read_arrays(arrays_bytes(s)) for s in (reference, arm)), seed=2)
    for ours, theirs in [
        (exact.kld_mean.value, stored.kld_mean.value),
        (exact.kld_mean.low, stored.kld_mean.low),
        (exact.kld_p99.value, stored.kld_p99.value),
        (exact.kld_p99.high, stored.kld_p99.high),
        (exact.kld_max, stored.kld_max),
        (exact.delta_p_mean, stored.delta_p_mean),
    ]:
        assert theirs == pytest.approx(ours, abs=1e-5)
    assert stored.ln_ppl_ratio.value == pytest.approx(exact.ln_ppl_ratio.value, abs=1e-4)
    assert (stored.top1_agreement, stored.exact) == (exact.top1_agreement, exact.exact)


def test_a_version_1_file_is_still_read() -> None:
    windows = simulated(LogitSpec(seed=3), corpus_windows(2, 12), 4)
    whole = ScoredPositions.concatenate(windows)
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        tokens=whole.tokens,
        ids=whole.ids,
        logprobs=whole.logprobs.astype(np.float32),
        lengths=np.asarray([w.count for w in windows], dtype=np.int32),
    )
    back = read_arrays(buffer.getvalue())
    assert np.array_equal(ScoredPositions.concatenate(back).ids, whole.ids)
    assert np.allclose(ScoredPositions.concatenate(back).logprobs, whole.logprobs, rtol=1e-6)
    meta = {"schema_version": 1, "arm": "a", "k": 4, "corpus_sha256": "0" * 64,
            "window_tokens": [12, 12], "concurrency": 1, "tokenizer_sha256": "1" * 64,
            "arrays_sha256": "2" * 64}  # fmt: skip
    assert FidelityScores.model_validate_json(json.dumps(meta)).schema_version == SCORES_VERSION
    upgraded = FidelityScores.model_validate_json(json.dumps({**meta, "schema_version": 2}))
    assert (upgraded.schema_version, upgraded.stored_against) == (SCORES_VERSION, None)


@pytest.mark.parametrize("kld", [0.0, 0.02, 0.5])
def test_an_arm_stored_against_the_reference_reads_back_as_if_it_stood_alone(kld: float) -> None:
    windows = corpus_windows(4, 30)
    reference = ScoredPositions.concatenate(
        read_arrays(arrays_bytes(simulated(LogitSpec(seed=4), windows, 20)))
    )
    arm = simulated(LogitSpec(seed=4, kld=kld), windows, 20)
    relative = arrays_bytes(arm, reference)
    for alone, back in zip(
        read_arrays(arrays_bytes(arm)), read_arrays(relative, reference), strict=True
    ):
        assert np.array_equal(alone.ids, back.ids) and np.array_equal(alone.tokens, back.tokens)
        assert np.array_equal(alone.logprobs, back.logprobs)  # the same steps, exactly
    assert len(relative) < len(arrays_bytes(arm))
    with pytest.raises(ScoresError, match="stored against the reference's"):
        read_arrays(relative)


def test_ids_not_in_the_references_row_are_kept_whole_and_the_others_found_in_any_column() -> None:
    rng = np.random.default_rng(3)
    basis = rng.choice(200_000, size=(50, 9), replace=False).astype(np.int32)
    basis[:, -1] = PAD_ID
    ids = np.take_along_axis(basis, rng.permuted(np.tile(np.arange(9), (50, 1)), axis=1), axis=1)
    ids[::3, 2] = 200_001 + np.arange(17)  # not in the reference's row
    brute = np.asarray(
        [[next((c for c in range(9) if basis[r, c] == ids[r, j]), -1) for j in range(9)]
         for r in range(50)]
    )  # fmt: skip
    found = matching_columns(ids, basis)
    assert np.array_equal(found < 0, brute < 0) and (found < 0).sum() == 17
    rows = np.arange(50)[:, None]
    assert np.array_equal(basis[rows, found][found >= 0], ids[found >= 0])

    def scores(of: np.ndarray) -> ScoredPositions:
        logprobs = np.sort(rng.random((50, 9)) * -10, axis=1)[:, ::-1]
        return ScoredPositions(ids[:, 0].copy(), of, np.where(of == PAD_ID, -math.inf, logprobs))

    arm, against = scores(ids), scores(basis)
    (back,) = read_arrays(arrays_bytes([arm], against), against)
    finite = np.isfinite(arm.logprobs)
    assert np.array_equal(back.ids, arm.ids) and np.array_equal(np.isfinite(back.logprobs), finite)
    assert np.abs(back.logprobs[finite] - arm.logprobs[finite]).max() <= LOGPROB_STEP / 2


def test_scores_of_other_positions_are_never_stored_against() -> None:
    windows = corpus_windows(2, 12)
    arm = simulated(LogitSpec(seed=4), windows, 4)
    other = ScoredPositions.concatenate(simulated(LogitSpec(seed=4), windows[:1], 4))
    with pytest.raises(ScoresError, match="store them alone"):
        arrays_bytes(arm, other)


def test_the_mean_kld_interval_holds_its_upper_side_on_skewed_windows() -> None:
    """Window means lognormal around a known mean: the generalized pivotal interval's upper
    end falls below the truth about 2.5 % of the time, the percentile bootstrap's far more."""
    rng = np.random.default_rng(11)
    missed = {"lognormal": 0, "bootstrap": 0}
    for campaign in range(400):
        levels = 0.03 * np.exp(rng.normal(-0.125, 0.5, 24))
        windows = WindowSums(sums=levels * 100, counts=np.full(24, 100.0))
        missed["lognormal"] += lognormal_mean(windows, campaign).high < 0.03
        missed["bootstrap"] += bootstrap_mean(windows, campaign).high < 0.03
    assert missed["lognormal"] <= 14 < missed["bootstrap"]


def test_a_window_without_divergence_leaves_the_mean_kld_to_the_window_bootstrap() -> None:
    windows = WindowSums(sums=np.asarray([0.0, 2.0, 3.0, 1.0]), counts=np.full(4, 100.0))
    assert lognormal_mean(windows, 3) == bootstrap_mean(windows, 3)
    assert lognormal_mean(replace(windows, sums=windows.sums + 1.0), 3) != bootstrap_mean(
        replace(windows, sums=windows.sums + 1.0), 3
    )


def test_the_p99_interval_treats_windows_as_clusters() -> None:
    """Woodruff's interval: the same positions are less certain where windows differ (hard
    stretches of text) than shuffled into like windows; its ends are pooled quantiles."""
    rng = np.random.default_rng(4)
    levels = np.exp(rng.normal(-0.125, 0.5, 96))
    windows = [level * rng.exponential(1.0, 127) for level in levels]
    many = woodruff_quantile(windows, 0.99)
    pooled = np.concatenate(windows)
    assert many.value == pytest.approx(float(np.quantile(pooled, 0.99)))
    assert pooled.min() <= many.low < many.value < many.high <= pooled.max()
    mixed = woodruff_quantile(np.split(rng.permutation(pooled), 96), 0.99)
    assert mixed.value == many.value and mixed.high - mixed.low < many.high - many.low
