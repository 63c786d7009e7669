"""``[[fidelity]]``: a fidelity cell, teacher-forced scoring of a pinned corpus on the lanes.
The same concept at another layer: ``evidence.stats.fidelity``,
``evidence.views.card.fidelity``, ``workload.fidelity``.

A fidelity cell asks whether a candidate still answers what the reference answers. The
corpus (a UTF-8 text file, or JSON lines of ``{"text": ...}``) is pinned by sha256 like a
dataset cell's file; it is tokenized once by the reference arm's ``/tokenize`` and cut into
``windows`` windows of ``input_tokens`` tokens every ``stride`` tokens; every arm scores
those same ids (``/v1/completions``, ``max_tokens = 1``, ``prompt_logprobs = k``). The
reference is ``[campaign] fidelity_reference`` (the incumbent by default); it is scored a
second time at ``floor_concurrency`` windows in flight, so the engine's own batch
non-determinism is measured the same night. ``greedy_prompts`` windows' openings are then
continued at temperature 0 for ``greedy_tokens`` tokens on every arm. Fidelity cells run
on each arm's lane after its speed cells and never enter a speed figure.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from faceoff.artifact import Spec
from matrix.engines import flag_value
from matrix.fields import MAX_DEADLINE_S, SLUG, FieldError, omitted_at
from matrix.traffic import SourceFile

# The rule's fidelity metrics; the first three are better lower (a limit is at most), the
# others higher (a limit is at least).
FIDELITY_METRICS = ("kld_mean", "kld_p99", "ppl_ratio", "top1_agreement", "greedy_agreement")
LOWER_IS_BETTER = frozenset({"kld_mean", "kld_p99", "ppl_ratio"})
MAX_WINDOWS = 10_000
MAX_WINDOW_TOKENS = 131_072
MAX_LOGPROBS = 1_000_000  # a whole vocabulary, where the engine allows it


class Corpus(SourceFile):
    format: Literal["text", "jsonl"] = Field(
        default="text",
        description='text: the file is the corpus; jsonl: lines of {"text": ...}, joined by '
        "blank lines.",
    )


class FidelityCell(Spec):
    id: str = Field(pattern=SLUG, description="Fidelity cell id, unique among all cells.")
    corpus: Corpus = Field(description="The corpus scored: its file, format and sha256.")
    input_tokens: int = Field(
        ge=2, le=MAX_WINDOW_TOKENS, description="Tokens of each window scored."
    )
    stride: int | None = Field(
        default=None,
        ge=1,
        le=MAX_WINDOW_TOKENS,
        description="Tokens between window starts; default input_tokens (windows abut).",
    )
    windows: int = Field(
        default=16,
        ge=2,
        le=MAX_WINDOWS,
        description="Windows scored (the first N the corpus holds); intervals resample them.",
    )
    prompt_logprobs: int = Field(
        default=20,
        ge=1,
        le=MAX_LOGPROBS,
        description="k: log-probabilities asked per position (vLLM's --max-logprobs is 20 by "
        "default); the KLD is a lower bound unless k covers the vocabulary.",
    )
    concurrency: int = Field(default=1, ge=1, le=64, description="Windows in flight.")
    floor_concurrency: int = Field(
        default=4,
        ge=0,
        le=64,
        description="The reference is scored again at this many windows in flight: the noise "
        "floor; 0 scores it once (no floor).",
    )
    greedy_prompts: int = Field(
        default=4, ge=0, le=1000, description="Windows whose openings are continued greedily."
    )
    greedy_tokens: int = Field(
        default=32, ge=1, le=4096, description="Tokens generated at temperature 0 per prompt."
    )
    arms: list[str] | None = Field(
        default=None, min_length=1, description="Arms scored; default all. Holds the reference."
    )
    deadline_s: float = Field(
        default=1200.0, gt=0, le=MAX_DEADLINE_S, description="Outer deadline on each arm."
    )

    @model_validator(mode="after")
    def _windows_fit(self) -> FidelityCell:
        if self.greedy_prompts > self.windows:
            raise FieldError(
                ("greedy_prompts",),
                f"{self.greedy_prompts} greedy prompts but {self.windows} windows; each greedy "
                "prompt is a window's opening: give at most windows",
            )
        return self

    @property
    def step(self) -> int:
        return self.stride or self.input_tokens

    @property
    def prompt_tokens(self) -> int:
        """Tokens of a greedy prompt: the first half of a window."""
        return max(1, self.input_tokens // 2)


def check_fidelity(
    cells: list[FidelityCell], arms: dict[str, int | None], reference: str, speed_ids: set[str]
) -> None:
    """Known arms (the reference among each cell's), unique ids, windows within context.

    ``arms``: each arm's declared max_model_len (None: undeclared).
    """
    seen = set(speed_ids)
    for index, cell in enumerate(cells):
        where = ("fidelity", index)
        if cell.id in seen:
            raise FieldError((*where, "id"), f"{cell.id!r} is already a cell id; ids are unique")
        seen.add(cell.id)
        scored = cell.arms or list(arms)
        unknown = sorted(set(scored) - set(arms))
        if unknown:
            raise FieldError((*where, "arms"), f"names unknown arms {unknown}; known: {list(arms)}")
        if reference not in scored:
            raise FieldError(
                (*where, "arms"),
                f"leaves out the fidelity reference {reference!r}; every arm is scored against "
                "it, so it must be scored too",
            )
        for name in scored:
            limit = arms[name]
            if limit is not None and cell.input_tokens + 1 > limit:
                raise FieldError(
                    (*where, "input_tokens"),
                    f"{cell.input_tokens} tokens and the one token asked exceed arm {name!r}'s "
                    f"max_model_len = {limit}; lower input_tokens",
                )


# The fewest windows at which the window intervals err at most 2.5 % a side on a limit
# (benchmarks/README.md): with fewer, a figure is descriptive and decides no limit.
CALIBRATED_WINDOWS = 12


class FidelityCriterion(Spec):
    """A rule's bound on a fidelity figure of each candidate against the reference."""

    metric: Literal["kld_mean", "kld_p99", "ppl_ratio", "top1_agreement", "greedy_agreement"] = (
        Field(
            description="kld_mean, kld_p99, ppl_ratio, top1_agreement, greedy_agreement "
            "(share of greedy prompts identical); each judged by its 95 % interval."
        )
    )
    limit: float = Field(
        gt=0,
        description="At most this for kld_mean, kld_p99 and ppl_ratio; at least this for "
        "top1_agreement and greedy_agreement (a share, 0..1).",
    )
    cells: list[str] | None = Field(
        default=None,
        min_length=1,
        exclude_if=omitted_at(None),
        description="Fidelity cell ids it judges; default every fidelity cell.",
    )

    @property
    def at_most(self) -> bool:
        return self.metric in LOWER_IS_BETTER


def check_fidelity_criteria(criteria: list[FidelityCriterion], cell_ids: list[str]) -> None:
    for index, criterion in enumerate(criteria):
        where = ("rule", "fidelity", index)
        if not cell_ids:
            raise FieldError(where, "judges fidelity, but the matrix has no [[fidelity]] cell")
        unknown = sorted(set(criterion.cells or ()) - set(cell_ids))
        if unknown:
            raise FieldError(
                (*where, "cells"), f"names unknown {unknown}; fidelity cells: {cell_ids}"
            )


VLLM_MAX_LOGPROBS = 20  # vLLM's --max-logprobs default


def vllm_logprobs_cap(argv: list[str]) -> int | None:
    """The largest prompt_logprobs a vLLM serve line accepts (None: no cap, ``-1``)."""
    given = flag_value(argv, "--max-logprobs")
    try:
        cap = VLLM_MAX_LOGPROBS if given is None else int(given)
    except ValueError:
        return None  # vLLM refuses the flag itself; the lane will say so
    return None if cap == -1 else cap


def check_logprobs(cells: list[FidelityCell], caps: dict[str, int | None]) -> None:
    """A cell asks no vLLM arm for more log-probabilities than its serve line allows.

    ``caps``: each vLLM arm the cell scores -> its cap (None: none); other engines are
    asked at run time, and a refusal blocks the arm with the engine's words.
    """
    for index, cell in enumerate(cells):
        for name, cap in caps.items():
            scored = cell.arms is None or name in cell.arms
            if scored and cap is not None and cell.prompt_logprobs > cap:
                raise FieldError(
                    ("fidelity", index, "prompt_logprobs"),
                    f"{cell.prompt_logprobs} exceeds arm {name!r}'s --max-logprobs {cap} (vLLM "
                    f"refuses more); lower prompt_logprobs or add --max-logprobs "
                    f"{cell.prompt_logprobs} to its engine_args",
                )
