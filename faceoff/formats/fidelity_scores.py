"""An arm's scored windows: what vLLM's ``prompt_logprobs`` said, kept as arrays.

A window of ``n`` corpus tokens is scored at positions 1..n-1 (the first has nothing
before it). At each position the engine returned its ``k`` most likely ids and always
the corpus token's own log-probability; a row holds those ids and log-probabilities,
the corpus token among them when it was not one of the k, most likely first, padded
with id -1 and log-probability -inf to k + 1 columns. ``scores.npz`` holds one arm's windows
concatenated and each window's ``lengths``; its ``scores.json`` beside it
(``FidelityScores``) pins the arrays by sha256 and says what was asked (k, the corpus, the
windows).

The arrays are stored compactly, since a night's corpus is tens of thousands of positions
per arm: ``ids`` + 1 (the pad becomes 0) in the smallest unsigned integer the vocabulary
needs, and each log-probability as a whole number of ``LOGPROB_STEP`` nats below zero (the
pad's -inf as ``INF_STEPS``), both split into byte planes so that deflate finds the high
bytes' runs of zeros. Each stored log-probability is then within ``LOGPROB_STEP / 2`` nats
of the engine's, so each probability within a relative 3.1e-5; every figure is computed
from what the file holds, so an audit that reads it again finds the same figures.

An arm scored after the reference (and the reference's floor) is stored against the
reference's scores of the same positions, since two engines of one model mostly return the
same ids: each id as the column of the reference's row that holds it (0: its own column;
``literal`` where the reference's row does not hold it, the id then kept in
``literal_ids``), and each log-probability as its step count's difference from the
reference's for that id (zigzag: 0, -1, 1, -2 … as 0, 1, 2, 3 …), the literals' as they
are. Nothing is rounded further: decoded against the reference, the ids and steps are the
ones the standalone form would hold. ``scores.json`` names the reference's folder and pins
its ``scores.npz``.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
from pydantic import Field, model_validator

from faceoff.artifact import Artifact

# Format history of scores.json (and of the scores.npz it pins):
#   1 — ids as int32, logprobs as float32;
#   2 — ids and logprobs quantized, in byte planes (``arrays_bytes``); v1 is read as it is;
#   3 — ``stored_against``/``against_sha256``: an arm's arrays may be stored against the
#       reference's (``relative_arrays``); a v2 file stands alone, as its arrays are.
SCORES_VERSION: Final = 3
SCORES_FILE = "scores.json"
ARRAYS_FILE = "scores.npz"
PAD_ID = -1
LOGPROB_STEP = 2.0**-14  # nats: below float32's own spacing near 1 nat, well under any figure
INF_STEPS = np.iinfo(np.uint32).max  # the pad's -inf
# where an arm's scores are stored against: the reference's folder beside it, or ".." (the
# floor, inside the reference's); never further
AGAINST = r"^\.\.(/[a-z0-9][a-z0-9._-]*)?$"

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

    schema_version: Literal[3] = Field(default=SCORES_VERSION, description="Format version.")
    arm: str = Field(description="The arm whose engine scored the windows.")
    k: int = Field(description="prompt_logprobs asked for: the ids returned per position.")
    corpus_sha256: str = Field(description="sha256 of the corpus file the windows were cut from.")
    window_tokens: list[int] = Field(description="Each window's token count, in order.")
    concurrency: int = Field(description="Windows in flight while they were scored.")
    tokenizer_sha256: str = Field(
        description="sha256 of this arm's own token ids for the corpus (its /tokenize)."
    )
    arrays_sha256: str = Field(description="sha256 of scores.npz beside this file.")
    stored_against: str | None = Field(
        default=None,
        pattern=AGAINST,
        description="The folder, relative to this one, whose scores.npz the arrays are stored "
        "against ('../<reference>' for an arm, '..' for the reference's floor); None: they "
        "stand alone.",
    )
    against_sha256: str | None = Field(
        default=None, description="sha256 of that folder's scores.npz (None: stand alone)."
    )

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        return upgraded_scores(data) if isinstance(data, dict) else data


def upgraded_scores(data: dict[str, Any]) -> dict[str, Any]:
    """A v1 or v2 ``scores.json`` as v3: its fields are the same, and its arrays stand alone
    (v1's in the v1 form, which ``read_arrays`` still reads)."""
    return (
        {**data, "schema_version": SCORES_VERSION} if data.get("schema_version") in (1, 2) else data
    )


def arrays_bytes(
    windows: Sequence[ScoredPositions], against: ScoredPositions | None = None
) -> bytes:
    """``scores.npz``: the windows concatenated, quantized, compressed; stored against the
    reference's scores of the same positions when ``against`` is given."""
    whole = ScoredPositions.concatenate(windows)
    arrays = standalone_arrays(whole) if against is None else relative_arrays(whole, against)
    arrays |= {"tokens": whole.tokens, "lengths": np.asarray([w.count for w in windows], np.int32)}
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)  # type: ignore[arg-type]  # stubs type one kwarg as bool
    return buffer.getvalue()


def standalone_arrays(whole: ScoredPositions) -> dict[str, npt.NDArray[Any]]:
    return {
        "ids": planes(smallest_unsigned(whole.ids.astype(np.int64) + 1)),
        "logprob_steps": planes(logprob_steps(whole.logprobs)),
    }


def relative_arrays(
    whole: ScoredPositions, against: ScoredPositions
) -> dict[str, npt.NDArray[Any]]:
    """The ids as columns of ``against``'s rows (0: the same column), the rest literal; the
    log-probabilities as zigzag step differences from ``against``'s for the same id."""
    if not np.array_equal(whole.tokens, against.tokens) or whole.ids.shape != against.ids.shape:
        raise ScoresError(
            f"scores of {whole.count} positions cannot be stored against scores of "
            f"{against.count} other positions: store them alone"
        )
    width = whole.ids.shape[1]
    columns = matching_columns(whole.ids, against.ids)
    literal = columns < 0
    codes = np.where(columns == np.arange(width), 0, np.where(literal, width + 1, columns + 1))
    steps = logprob_steps(whole.logprobs).astype(np.int64)
    theirs = np.take_along_axis(steps_of(against), np.maximum(columns, 0), axis=1)
    return {
        "columns": planes(smallest_unsigned(codes.astype(np.int64))),
        "literal_ids": planes(smallest_unsigned(whole.ids[literal].astype(np.int64) + 1)),
        "logprob_codes": planes(
            smallest_unsigned(np.where(literal, steps, zigzag(steps - theirs)))
        ),
    }


def matching_columns(ids: IntArray, basis: IntArray) -> npt.NDArray[np.int64]:
    """For each id, the column of its row in ``basis`` holding the same id (its own column
    where that one does), -1 where none does. One sorted search over all rows at once: each
    row's ids are offset by its index times a span above any id, so that rows never meet."""
    rows, width = ids.shape
    if ids.size == 0:
        return np.zeros(ids.shape, dtype=np.int64)
    span = int(max(ids.max(), basis.max())) + 2
    offset = np.arange(rows, dtype=np.int64)[:, None] * span
    order = np.argsort(basis, axis=1, kind="stable")
    keys = (np.take_along_axis(basis, order, axis=1).astype(np.int64) + 1 + offset).ravel()
    wanted = (ids.astype(np.int64) + 1 + offset).ravel()
    at = np.searchsorted(keys, wanted).clip(max=keys.size - 1)
    hit = (keys[at] == wanted).reshape(rows, width)
    found = np.where(hit, order.ravel()[at].reshape(rows, width), -1)
    return np.where(ids == basis, np.arange(width), found).astype(np.int64)


def zigzag(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Signed differences as unsigned codes, small either way: 0, -1, 1, -2 … -> 0, 1, 2, 3 …"""
    return np.where(values >= 0, 2 * values, -2 * values - 1)


def unzigzag(codes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return np.where(codes % 2 == 0, codes // 2, -(codes + 1) // 2)


def steps_of(positions: ScoredPositions) -> npt.NDArray[np.int64]:
    return logprob_steps(positions.logprobs).astype(np.int64)


def read_arrays(raw: bytes, against: ScoredPositions | None = None) -> list[ScoredPositions]:
    """The windows ``arrays_bytes`` wrote (or its v1 form: int32 ids, float32 logprobs);
    ``against``: the reference's scores a relative file was stored against."""
    with np.load(io.BytesIO(raw)) as data:
        tokens, lengths = data["tokens"].astype(np.int32), data["lengths"]
        if "logprobs" in data:  # v1
            ids, logprobs = data["ids"], data["logprobs"].astype(np.float64)
        elif "columns" in data:
            ids, logprobs = from_relative(data, tokens, against)
        else:
            ids = unplanes(data["ids"], tokens.size).astype(np.int32) - 1
            logprobs = from_steps(unplanes(data["logprob_steps"], tokens.size))
    bounds = np.cumsum(np.concatenate([[0], lengths]))
    return [
        ScoredPositions(tokens[a:b], ids[a:b], logprobs[a:b]) for a, b in itertools.pairwise(bounds)
    ]


def from_relative(
    data: Mapping[str, npt.NDArray[Any]], tokens: IntArray, against: ScoredPositions | None
) -> tuple[IntArray, FloatArray]:
    """The ids and log-probabilities ``relative_arrays`` stored against ``against``."""
    if against is None or not np.array_equal(tokens, against.tokens):
        raise ScoresError(
            "these scores are stored against the reference's: read them with the reference's "
            "scores of the same positions"
        )
    codes = unplanes(data["columns"], tokens.size).astype(np.int64)
    width = codes.shape[1]
    literal = codes == width + 1
    columns = np.where(literal, 0, np.where(codes == 0, np.arange(width), codes - 1))
    ids = np.take_along_axis(against.ids, columns, axis=1).astype(np.int64)
    ids[literal] = unplanes(data["literal_ids"], int(literal.sum())).reshape(-1) - 1
    stored = unplanes(data["logprob_codes"], tokens.size).astype(np.int64)
    theirs = np.take_along_axis(steps_of(against), columns, axis=1)
    return ids.astype(np.int32), from_steps(np.where(literal, stored, theirs + unzigzag(stored)))


def logprob_steps(logprobs: FloatArray) -> npt.NDArray[np.uint32]:
    steps = np.clip(np.rint(-logprobs / LOGPROB_STEP), 0, INF_STEPS - 1)
    return np.where(np.isfinite(logprobs), steps, INF_STEPS).astype(np.uint32)


def from_steps(steps: npt.NDArray[Any]) -> FloatArray:
    values = -steps.astype(np.float64) * LOGPROB_STEP
    return np.asarray(np.where(steps == INF_STEPS, -math.inf, values), dtype=np.float64)


def smallest_unsigned(values: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
    """``values`` (none negative) in the narrowest unsigned dtype that holds the largest."""
    top = int(values.max(initial=0))
    return values.astype(np.min_scalar_type(top))


def planes(array: npt.NDArray[Any]) -> npt.NDArray[np.uint8]:
    """A 2-D array's bytes, one row per byte of its items (the high bytes' zeros together).

    Shape (itemsize, items); its dtype's byte order is little-endian, as ``unplanes`` reads."""
    little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return np.ascontiguousarray(little.view(np.uint8).reshape(-1, little.itemsize).T)


def unplanes(stored: npt.NDArray[np.uint8], rows: int) -> npt.NDArray[Any]:
    """The (rows, columns) array ``planes`` wrote, as unsigned integers of its width."""
    width = stored.shape[0]
    items = np.ascontiguousarray(stored.T).view(np.dtype(f"<u{width}"))[:, 0]
    return items.reshape(rows, -1) if rows else items.reshape(0, 0)
