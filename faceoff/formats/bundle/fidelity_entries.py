"""``comparison.json``'s ``fidelity``: each fidelity cell's arms against the reference, as
figures with their intervals, the greedy agreement and the noise floor. Computed from the
stored log-probabilities by ``evidence.comparison.fidelity.entries``."""

from __future__ import annotations

from pydantic import Field

from faceoff.artifact import Spec


class Bounds(Spec):
    value: float = Field(description="The figure.")
    low: float = Field(description="Lower end of its 95 % interval.")
    high: float = Field(description="Upper end of its 95 % interval.")


class Greedy(Spec):
    prompts: int = Field(description="Greedy prompts compared.")
    tokens: int = Field(description="Tokens generated per prompt.")
    median_tokens_to_divergence: float = Field(
        description="Median tokens before the first differing token (tokens if never)."
    )
    identical_share: float = Field(description="Share of prompts identical to the end.")
    identical_interval: Bounds | None = Field(
        default=None,
        description="That share's exact binomial (Clopper–Pearson) 95 % interval over the "
        "prompts; None in a file written before it had one: a limit on it is then inconclusive.",
    )


class FidelityFiguresEntry(Spec):
    positions: int = Field(description="Positions scored (every window, the first excluded).")
    windows: int = Field(description="Windows scored; the intervals resample them.")
    exact: bool = Field(description="The returned ids held all the mass: the KLD is the full one.")
    kld_mean: Bounds = Field(description="Mean KLD (nats) with its interval.")
    kld_median: float = Field(description="Median KLD.")
    kld_p99: float = Field(description="99th percentile KLD.")
    kld_p99_interval: Bounds | None = Field(
        default=None,
        description="Its 98 % interval (Woodruff's, windows as clusters); None in a file "
        "written before it had one: a limit on it is then inconclusive.",
    )
    kld_max: float = Field(description="Largest KLD at any position.")
    top1_agreement: float = Field(description="Share of positions with the reference's top id.")
    top1_interval: Bounds | None = Field(
        default=None,
        description="Its 95 % interval: 1 − that of the share that differs (a lognormal mean's "
        "over windows); None in a file written before it had one: a limit on it is then "
        "inconclusive.",
    )
    delta_p_mean: float = Field(description="Mean Δp of the reference's most likely id.")
    ppl_reference: float = Field(description="The reference's perplexity on the corpus.")
    ppl_arm: float = Field(description="This arm's perplexity on the corpus.")
    ln_ppl_ratio: Bounds = Field(description="ln(PPL arm / PPL reference) with its interval.")
    kld_quantiles: list[float] = Field(
        description="Per-position KLD at 0, 5, …, 100 %: its distribution, as the report draws."
    )


class FidelityEntry(Spec):
    cell: str = Field(description="Fidelity cell id.")
    arm: str = Field(description="The arm compared (the reference's own entry is its floor).")
    reference: str = Field(description="The arm it is compared with.")
    k: int = Field(description="prompt_logprobs asked per position.")
    figures: FidelityFiguresEntry | None = Field(
        description="The figures; None when the arm or the reference was not scored."
    )
    floor: Bounds | None = Field(
        description="The reference against its second scoring: the noise floor's mean KLD."
    )
    within_floor: bool | None = Field(
        description="The arm's KLD interval reaches the floor's: indistinguishable."
    )
    greedy: Greedy | None = Field(description="Greedy agreement with the reference.")
    blocked: str | None = Field(description="Why there are no figures: reason: sentence.")
    sources: list[str] = Field(description="Files the entry was computed from.")
    partial: list[str] = Field(
        default_factory=list,
        description="Partial scoring: the windows a scoring of the arm or the reference that "
        "did not finish (blocked, or the run ended) kept as each was scored, in no figure; a "
        "resumed run of an arm not blocked scores only the rest.",
    )
