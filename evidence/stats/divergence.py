"""Per-position divergence of an arm from the reference, from the ids each engine returned.

An engine returns, at each position, its k most likely ids and the corpus token; the
rest of its distribution is unknown. The KLD here is taken over a partition of the
vocabulary: each id both engines returned a log-probability for, and one bucket for
everything else. Merging outcomes into buckets can only lower a divergence (the
data-processing inequality), so this is a lower bound of the full KL(reference ‖ arm),
equal to it when k covers the vocabulary, and rising towards it as k grows. Pure numpy.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from faceoff.formats.fidelity_scores import PAD_ID, ScoredPositions

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
COVERED = 1e-4  # returned mass this close to 1 is the whole distribution (float32 storage)
TINY = 1e-300  # a rest bucket the arm emptied: the divergence is large, not infinite


def check_aligned(reference: ScoredPositions, arm: ScoredPositions) -> None:
    if reference.count != arm.count or not np.array_equal(reference.tokens, arm.tokens):
        raise ValueError(
            f"the arm scored {arm.count} positions and the reference {reference.count}, "
            "or other tokens: both must score the same token ids"
        )


def shared_logprobs(
    reference: ScoredPositions, arm: ScoredPositions
) -> tuple[BoolArray, FloatArray]:
    """Which reference columns the arm also returned, and the arm's log-probability there."""
    match = (reference.ids[:, :, None] == arm.ids[:, None, :]) & (
        reference.ids[:, :, None] != PAD_ID
    )
    shared = match.any(axis=2)
    arm_lp = np.where(match, arm.logprobs[:, None, :], 0.0).sum(axis=2)
    return shared, arm_lp


def position_klds(reference: ScoredPositions, arm: ScoredPositions) -> FloatArray:
    """KL(reference ‖ arm) at each position over the shared ids plus one rest bucket."""
    check_aligned(reference, arm)
    shared, arm_lp = shared_logprobs(reference, arm)
    ref_lp = np.where(shared, reference.logprobs, 0.0)
    p = np.where(shared, np.exp(ref_lp), 0.0)
    q = np.where(shared, np.exp(arm_lp), 0.0)
    head = np.where(shared, p * (ref_lp - arm_lp), 0.0).sum(axis=1)
    p_rest = np.clip(1.0 - p.sum(axis=1), 0.0, 1.0)
    q_rest = np.clip(1.0 - q.sum(axis=1), TINY, 1.0)
    safe_p = np.maximum(p_rest, TINY)
    rest = np.where(p_rest > 0.0, p_rest * (np.log(safe_p) - np.log(q_rest)), 0.0)
    return np.asarray(
        np.maximum(head + rest, 0.0), dtype=np.float64
    )  # rounding can leave -1e-17 where the arms agree


def covers_vocabulary(scored: ScoredPositions) -> bool:
    """Whether every position's returned ids hold all the mass (k covered the vocabulary)."""
    mass = np.exp(scored.logprobs).sum(axis=1)
    return bool(np.all(mass >= 1.0 - COVERED))


def top_ids(scored: ScoredPositions) -> npt.NDArray[np.int32]:
    """Each position's most likely id as the engine returned it."""
    index = np.argmax(scored.logprobs, axis=1)
    return np.take_along_axis(scored.ids, index[:, None], axis=1)[:, 0]


def same_top1(reference: ScoredPositions, arm: ScoredPositions) -> BoolArray:
    check_aligned(reference, arm)
    return np.asarray(top_ids(reference) == top_ids(arm), dtype=np.bool_)


def top_delta_p(reference: ScoredPositions, arm: ScoredPositions) -> FloatArray:
    """arm p − reference p of the reference's most likely id, at each position.

    Where the arm did not return that id, its probability is at most the smallest it
    returned: that bound is used, so Δp is then an upper bound.
    """
    check_aligned(reference, arm)
    index = np.argmax(reference.logprobs, axis=1)
    ref_top = np.take_along_axis(reference.logprobs, index[:, None], axis=1)[:, 0]
    shared, arm_lp = shared_logprobs(reference, arm)
    known = np.take_along_axis(shared, index[:, None], axis=1)[:, 0]
    at_top = np.take_along_axis(arm_lp, index[:, None], axis=1)[:, 0]
    floor = np.where(arm.ids != PAD_ID, arm.logprobs, np.inf).min(axis=1)
    return np.exp(np.where(known, at_top, floor)) - np.exp(ref_top)
