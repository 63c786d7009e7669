"""``[[quality]]``: evaluator results imported beside the speed evidence, with their bands.
The same concept at another layer: ``evidence.comparison.quality``,
``evidence.views.card.quality``.

A speed comparison says nothing of what the recipe does to the answers. Each entry
names an evaluator's result file per arm (lm-evaluation-harness JSON, a tool-eval-bench
summary, a KLD-versus-reference file, all JSON) and the metrics whose candidate value
may trail the incumbent's by at most a declared tolerance. ``evidence.comparison.quality`` copies
the files into the bundle, hashes them and judges each band; a candidate outside a band
is not promotable, and the card names the metric.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from faceoff.artifact import Spec
from matrix.fields import SLUG, FieldError

Evaluator = Literal["lm_eval", "tool_eval_bench", "kld"]


class QualityBand(Spec):
    metric: str = Field(
        description="Path of a number in the result JSON, keys joined by '/', e.g. "
        "'results/hellaswag/acc_norm,none', 'score', 'kld_mean'."
    )
    higher_is_better: bool = Field(
        default=True, description="false for a divergence or an error rate (KLD)."
    )
    tolerance: float = Field(
        ge=0, description="How far the candidate may trail the incumbent on this metric."
    )


class QualityImport(Spec):
    name: str = Field(pattern=SLUG, description="Name of the import; its bundle folder.")
    evaluator: Evaluator = Field(description="The evaluator that wrote the result files.")
    results: dict[str, str] = Field(
        min_length=2, description="Arm name -> path of its result file (JSON)."
    )
    bands: list[QualityBand] = Field(min_length=1, description="The metrics judged.")


def check_quality(imports: list[QualityImport], arms: list[str], incumbent: str) -> None:
    """Each import names known arms, the incumbent among them; a FieldError otherwise."""
    for index, entry in enumerate(imports):
        unknown = sorted(set(entry.results) - set(arms))
        if unknown:
            raise FieldError(
                ("quality", index, "results"), f"names unknown arms {unknown}; known: {arms}"
            )
        if incumbent not in entry.results:
            raise FieldError(
                ("quality", index, "results"),
                f"no result for the incumbent {incumbent!r}; a band compares each candidate "
                "with it",
            )
