"""``cell.json``: the facts the campaign flow records about one cell attempt.

The journal, the request plan and the samples say what the client and the collectors saw;
this record adds what only the orchestrator knows: whether the lane came up and proved its
identity, the telemetry window, the deadline, how the client and the lane ended, and the
collectors' cadence. The guards read it; they never write it. Whether the engine drained
is not recorded here: the drain sample in ``engine.jsonl`` proves it (``guards.counters``).

Format history of ``schema_version`` (in full: docs/guards.md, "Artifacts"):
  1 — first release.
  2 — ``lane_end`` gains ``signal`` and ``detail``; ``oom_killed`` never from exit 137 alone.
  3 — ``collector_settings`` gains ``stall_threshold_ms`` (versions 1 and 2 still read).
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, Field

from collectors.settings import CollectorSettings
from faceoff.artifact import Artifact, Spec
from faceoff.formats.attempt.stalls import CellWindow

CELL_FILE = "cell.json"


class IdentityRef(Spec):
    """Where the lane's identity verdict is, and what it said."""

    path: str = Field(description="identity.json of the lane run, relative to the campaign folder.")
    sha256: str | None = Field(description="sha256 of that file's bytes; None if none was written.")
    ok: bool = Field(description="Every pinned identity field matched.")
    reason: str | None = Field(description="The identity verdict's sentence when it did not.")


class LaneAtEnd(Spec):
    """The lane as the flow found it after the cell's drain."""

    running: bool = Field(
        description="The lane's process or container was still running and its API answered."
    )
    exit_code: int | None = Field(
        description="Its exit status when it had ended (128+N: signal N); None if unobserved."
    )
    oom_killed: bool | None = Field(
        description="An OOM kill: Docker's OOMKilled flag, or a rise of the OOM-kill counter of "
        "a host lane's memory cgroup; None where neither can be read."
    )
    signal: int | None = Field(default=None, description="The signal that ended it, if one did.")
    detail: str = Field(default="", description="How it ended, as first observed.")

    @property
    def oom(self) -> bool:
        """An OOM observation: only the daemon's or the kernel's word; a SIGKILL is not one."""
        return bool(self.oom_killed)


class CellRecord(Artifact):
    schema_version: Literal[1, 2, 3] = Field(default=3, description="Cell record format version.")
    campaign: str = Field(description="Campaign name.")
    matrix_id: str = Field(description="Frozen matrix id the cell ran under.")
    cell_id: str = Field(description="Cell id in the frozen matrix.")
    arm: str = Field(description="Arm name.")
    attempt: int = Field(ge=1, description="Attempt number; a rerun is a new attempt folder.")
    lane_run: str | None = Field(
        description="Lane run folder (lanes/<arm>/<run>) relative to the campaign folder."
    )
    lane_ready: bool = Field(description="The lane passed readiness before the cell.")
    lane_ready_reason: str | None = Field(description="Why it did not, when it did not.")
    identity: IdentityRef | None = Field(description="The identity verdict; None if never checked.")
    telemetry_error: str | None = Field(
        description="Why the collectors could not start, when they could not."
    )
    setup_error: str | None = Field(
        default=None,
        description="Why the attempt could not be set up (e.g. the plan could not be built).",
    )
    window: CellWindow | None = Field(
        description="First send to last end of every journaled request "
        "(collectors.cadence.journal_window); None when no request was sent."
    )
    started_at: AwareDatetime = Field(description="When the cell attempt began (UTC).")
    ended_at: AwareDatetime = Field(description="When it ended, drain included (UTC).")
    deadline_s: float = Field(gt=0, description="The cell deadline the client ran under.")
    deadline_hit: bool = Field(description="The client stopped because the deadline passed.")
    client_exit_code: int | None = Field(
        description="Exit status of python -m workload.cell_client; None if it was never started."
    )
    lane_end: LaneAtEnd | None = Field(description="The lane after the drain; None if not looked.")
    collector_settings: CollectorSettings = Field(description="Cadence the collectors ran on.")

    @property
    def ran(self) -> bool:
        """Whether the client process was started at all."""
        return self.client_exit_code is not None
