"""What ``comparison.json`` says each probe cell answers: one figure per arm, paired.

A probe cell exists to answer one question of the field reports (how long does a
short request wait behind a long prefill, what does a returning turn cost, is the
needle recalled); ``evidence.comparison.probe_answers`` computes the answer from the native
files, and the card prints it in one line. Kept apart from ``faceoff.formats.bundle.comparison``
so that the answer's shape has one home.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from faceoff.artifact import Spec

Unit = Literal["s", "tok/s", "share", "tokens"]


class RoleFigure(Spec):
    """The same statistic of another role of the cell, shown beside the answer."""

    role: str = Field(description="Request role.")
    incumbent: float | None = Field(description="The incumbent's figure.")
    candidate: float | None = Field(description="The candidate's figure.")


class ProbeAnswer(Spec):
    question: str = Field(description="Stable code of the question, e.g. short_ttft.")
    label: str = Field(description="The question in words.")
    candidate: str = Field(description="Candidate arm of the pair.")
    role: str | None = Field(description="Request role the answer is taken over; None: all.")
    statistic: str = Field(
        description="p50, max, aggregate, recalled, verified (a needle search) or over the cell."
    )
    unit: Unit = Field(description="Unit of the figures.")
    incumbent_value: float | None = Field(description="The incumbent's figure.")
    candidate_value: float | None = Field(description="The candidate's figure.")
    ratio: float | None = Field(description="candidate / incumbent of the paired figure.")
    low: float | None = Field(description="Lower bound of the ratio's bootstrap interval.")
    high: float | None = Field(description="Upper bound of the ratio's bootstrap interval.")
    confidence: float | None = Field(description="Interval confidence.")
    n_incumbent: int = Field(description="Incumbent requests (or values) it rests on.")
    n_candidate: int = Field(description="Candidate requests (or values) it rests on.")
    interval_note: str | None = Field(description="Why there is no interval, when there is none.")
    beside: list[RoleFigure] = Field(description="The other roles' figures.")
    sources: list[str] = Field(description="Bundle files the figures are computed from.")


class StreamLatency(Spec):
    """Per-stream time to first output of one arm in a concurrent cell (p50 of the stream's
    requests): a prefill probe asks for one token, which a reasoning model spends thinking."""

    arm: str = Field(description="Arm name.")
    ttfo_s: list[float | None] = Field(description="Stream index -> TTFO p50 in seconds.")
