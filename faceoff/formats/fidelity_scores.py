"""An arm's scored windows: what vLLM's ``prompt_logprobs`` said, kept as arrays.

A window of ``n`` corpus tokens is scored at positions 1..n-1 (the first has nothing
before it). At each position the engine returned its ``k`` most likely ids and always
the corpus token's own log-probability; a row holds those ids and log-probabilities,
the corpus token among them when it was not one of the k, most likely first, padded
with id -1 and log-probability -inf to k + 1 columns. ``scores.npz`` holds one arm's windows
concatenated (``tokens``, ``ids`` as int32, ``logprobs`` as float32, and each window's
``lengths``); its ``scores.json`` beside it (``FidelityScores``) pins the arrays by
sha256 and says what was asked (k, the corpus, the windows).
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field

from faceoff.artifact import Artifact

# Format history of scores.json: 1 — first version.
SCORES_FILE = "scores.json"
ARRAYS_FILE = "scores.npz"
PAD_ID = -1

IntArray = npt.NDArray[np.int32]
FloatArray = npt.NDArray[np.float64]


class ScoresError(ValueError):
    """A ``prompt_logprobs`` answer that cannot be read as one window's scores."""


@dataclass(frozen=True)
class ScoredPositions:
    """Positions scored by one arm: the corpus token and the ids the engine returned.

    ``ids`` and ``logprobs`` are (positions, k + 1); ``tokens`` is (positions,).
    """

    tokens: IntArray
    ids: IntArray
    logprobs: FloatArray

    def __post_init__(self) -> None:
        rows = self.tokens.shape[0]
        if self.ids.shape != self.logprobs.shape or self.ids.shape[0] != rows:
            raise ScoresError(
                f"{rows} tokens for ids {self.ids.shape} and logprobs {self.logprobs.shape}"
            )

    @property
    def count(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def token_logprobs(self) -> FloatArray:
        """Each position's corpus token's own log-probability (always returned)."""
        hit = self.ids == self.tokens[:, None]
        return np.asarray(np.where(hit, self.logprobs, 0.0).sum(axis=1), dtype=np.float64)

    @classmethod
    def concatenate(cls, parts: Sequence[ScoredPositions]) -> ScoredPositions:
        width = max((p.ids.shape[1] for p in parts), default=1)
        return cls(
            tokens=np.concatenate([p.tokens for p in parts]).astype(np.int32),
            ids=np.concatenate([pad(p.ids, width, PAD_ID) for p in parts]).astype(np.int32),
            logprobs=np.concatenate([pad(p.logprobs, width, -math.inf) for p in parts]),
        )


def pad(array: npt.NDArray[Any], width: int, fill: float) -> npt.NDArray[Any]:
    extra = width - array.shape[1]
    return np.pad(array, ((0, 0), (0, extra)), constant_values=fill) if extra else array


def from_prompt_logprobs(
    tokens: Sequence[int], entries: Sequence[Mapping[str, Any] | None], k: int
) -> ScoredPositions:
    """One window's positions from vLLM's ``prompt_logprobs`` for the prompt ``tokens``."""
    if len(entries) != len(tokens):
        raise ScoresError(f"{len(entries)} prompt_logprobs entries for {len(tokens)} tokens")
    rows = [row(tokens[i], entries[i], k, i) for i in range(1, len(tokens))]
    width = k + 1
    return ScoredPositions(
        tokens=np.asarray(tokens[1:], dtype=np.int32),
        ids=np.asarray([[t for t, _ in r] for r in rows], dtype=np.int32).reshape(-1, width),
        logprobs=np.asarray([[lp for _, lp in r] for r in rows], dtype=np.float64).reshape(
            -1, width
        ),
    )


def row(
    token: int, entry: Mapping[str, Any] | None, k: int, position: int
) -> list[tuple[int, float]]:
    """The ids returned at one position, most likely first, padded to k + 1 columns."""
    if not isinstance(entry, Mapping) or str(token) not in entry:
        raise ScoresError(f"position {position}: no logprob for the prompt's token {token}")
    if len(entry) > k + 1:
        raise ScoresError(f"position {position}: {len(entry)} ids returned for k = {k}")
    pairs = sorted(((int(t), float(v["logprob"])) for t, v in entry.items()), key=by_logprob)
    return pairs + [(PAD_ID, -math.inf)] * (k + 1 - len(pairs))


def by_logprob(pair: tuple[int, float]) -> tuple[float, int]:
    return -pair[1], pair[0]


class FidelityScores(Artifact):
    """``scores.json``: what one arm's ``scores.npz`` holds and how it was asked."""

    schema_version: Literal[1] = Field(default=1, description="Format version.")
    arm: str = Field(description="The arm whose engine scored the windows.")
    k: int = Field(description="prompt_logprobs asked for: the ids returned per position.")
    corpus_sha256: str = Field(description="sha256 of the corpus file the windows were cut from.")
    window_tokens: list[int] = Field(description="Each window's token count, in order.")
    concurrency: int = Field(description="Windows in flight while they were scored.")
    tokenizer_sha256: str = Field(
        description="sha256 of this arm's own token ids for the corpus (its /tokenize)."
    )
    arrays_sha256: str = Field(description="sha256 of scores.npz beside this file.")


def arrays_bytes(windows: Sequence[ScoredPositions]) -> bytes:
    """``scores.npz``: the windows concatenated, compressed."""
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


def read_arrays(raw: bytes) -> list[ScoredPositions]:
    """The windows ``arrays_bytes`` wrote."""
    with np.load(io.BytesIO(raw)) as data:
        tokens, ids = data["tokens"], data["ids"]
        logprobs = data["logprobs"].astype(np.float64)
        bounds = np.cumsum(np.concatenate([[0], data["lengths"]]))
    return [
        ScoredPositions(tokens[a:b], ids[a:b], logprobs[a:b]) for a, b in itertools.pairwise(bounds)
    ]
