"""``diagnostics/<cell>/<arm>/run-<n>/diagnostic.json``: what one diagnostic request of a
cell did on an arm's lane, a function of the run folder's native files and of what the flow
saw around the request (``boot-log-tail.txt`` beside it: the lane's last boot log lines).
Computed by ``evidence.attempt.diagnostics``, written by ``flows.campaign.diagnostic_run``.

Format history of ``Diagnostic.schema_version``:
  1 — first release.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec

DIAGNOSTICS_DIR = "diagnostics"
DIAGNOSTIC_FILE = "diagnostic.json"
LOG_TAIL_FILE = "boot-log-tail.txt"


class Seen(Spec):
    """What the flow saw around the request; the audit carries it over (no file says it)."""

    lane_run: str = Field(description="The lane run folder that served it, bundle-relative.")
    lane_usable: bool = Field(description="Readiness and identity passed.")
    lane_reason: str | None = Field(description="Why the lane could not serve, when it could not.")
    warmups_failed: str | None = Field(description="How the arm's warmups failed, when they did.")
    setup_error: str | None = Field(description="Why the request could not be planned or sent.")

    @property
    def why_not_run(self) -> str | None:
        return self.lane_reason or self.setup_error


class Diagnostic(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Diagnostic format version.")
    cell_id: str = Field(description="The diagnosed cell.")
    arm: str = Field(description="The arm whose lane served the request.")
    run: int = Field(ge=1, description="Which diagnostic run of this cell on this arm.")
    seen: Seen = Field(description="The lane run and what the flow saw around the request.")
    status: str = Field(description="The request's terminal status, or not_run.")
    error: str | None = Field(description="The request's error, when it had one.")
    finish_reason: str | None = Field(description="finish_reason the stream ended with.")
    prompt_sha256: str | None = Field(description="Prompt-token vector hash on this lane.")
    reasoning_effort: str | None = Field(description="The effort this arm sent (variants).")
    input_tokens: int | None = Field(description="Prompt tokens by the lane's /tokenize.")
    output_tokens: int | None = Field(description="usage.completion_tokens.")
    ttft_s: float | None = Field(description="Send to first visible content chunk.")
    e2e_s: float | None = Field(description="Send to last token chunk.")
    tpot_s: float | None = Field(description="Decode time per output token after the first.")
    chunk_offsets_ms: list[float] = Field(description="Each token chunk's arrival after send.")
    max_gap_ms: float | None = Field(description="Longest wait between two token chunks.")
    scrapes: list[str] = Field(description="Status of the /metrics scrape before and after.")
    engine_deltas: dict[str, float] = Field(
        description="Engine counters and histogram _count/_sum: after minus before the request."
    )
