"""``comparison.json``'s ``quality``: each imported evaluator result, the copies it was read
from and each candidate's band judged. Imported and judged by ``evidence.comparison.quality``."""

from __future__ import annotations

from pydantic import Field

from faceoff.artifact import Spec
from matrix.quality import Evaluator


class QualityFile(Spec):
    arm: str = Field(description="Arm the evaluator ran against.")
    path: str = Field(description="The imported copy, relative to the bundle.")
    sha256: str | None = Field(description="sha256 of the copy; None when it is missing.")
    problem: str | None = Field(description="Why it could not be read, when it could not.")


class QualityCheck(Spec):
    candidate: str = Field(description="Candidate arm.")
    metric: str = Field(description="Metric path in the result JSON.")
    higher_is_better: bool = Field(description="Direction of the metric.")
    tolerance: float = Field(description="How far the candidate may trail the incumbent.")
    incumbent: float | None = Field(description="The incumbent's value.")
    candidate_value: float | None = Field(description="The candidate's value.")
    shortfall: float | None = Field(description="How far the candidate trails (< 0: ahead).")
    within: bool | None = Field(description="Inside the band; None when a value is missing.")
    sentence: str = Field(description="The verdict in one sentence.")


class QualityResult(Spec):
    name: str = Field(description="Name of the import.")
    evaluator: Evaluator = Field(description="The evaluator that wrote the files.")
    files: list[QualityFile] = Field(description="The imported result files, per arm.")
    checks: list[QualityCheck] = Field(description="Per candidate and band.")
