"""What a lane run leaves behind: ``lane.json``, ``inspect.json`` and ``identity.json``
(its readiness, expected and observed identity, weights manifest and verdict), and its target.
The same concept at another layer: ``lanes.lane``.

Here, apart from starting and judging a lane, so that the evidence reads these files
without loading the lane machinery.

Format history of ``IdentityRecord.schema_version``:
  1 — first release.
Format history of ``LaneRecord.schema_version``:
  1 — first release.
  2 — ``added_args``: the flags faceoff appended to bind a vLLM engine (version 1 still reads).
Format history of ``InspectRecord.schema_version``:
  1 — first release.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from matrix.arm import LaneKind, Mount

LANES_DIR = "lanes"  # <campaign>/lanes/<arm>/<run>/
LANE_FILE = "lane.json"
INSPECT_FILE = "inspect.json"
BOOT_LOG_FILE = "boot.log"
IDENTITY_FILE = "identity.json"
SIGNAL_EXIT_BASE = 128  # a shell's (and Docker's) spelling of "ended by signal N"


class LaneTarget(Spec):
    """What a memory sampler watches: the container, or the process group of a host lane."""

    kind: Literal["container", "process"] = Field(description="Docker container or host process.")
    container_id: str | None = Field(default=None, description="Docker container id.")
    pid: int | None = Field(
        default=None, description="Host pid of the lane's main process (the container's init)."
    )


class LaneExit(Spec):
    """How a lane ended, as first observed, for the flow's OOM and crash rules."""

    exit_code: int | None = Field(
        description="Exit status (128+N: signal N); None if it could not be observed (a worker "
        "of a host lane ended, or the API stopped answering, while the leader ran)."
    )
    signal: int | None = Field(default=None, description="Signal that ended it, when one did.")
    oom_killed: bool | None = Field(
        default=None,
        description="An OOM kill: Docker's OOMKilled flag, or a rise of the oom_kill counter of "
        "a host lane's memory cgroup; None where neither can be read. A SIGKILL alone is not one.",
    )
    finished_at: datetime | None = Field(default=None, description="When it ended (UTC).")
    detail: str = Field(default="", description="A sentence: how it was stopped or why it ended.")

    @property
    def sentence(self) -> str:
        """How it ended in one phrase: the exit status and an OOM kill once each, added only
        when the detail does not already name them."""
        parts = [self.detail or "ended"]
        code = self.exit_code
        if code is not None and not re.search(rf"\b{code}\b", self.detail):
            parts.append(f"status {code}")
        if self.oom_killed and "OOM-killed" not in self.detail:
            parts.append("OOM-killed")
        return ", ".join(parts)


class LaneRecord(Artifact):
    """``lane.json``: one start of one arm, rewritten as the run moves on."""

    schema_version: Literal[1, 2] = Field(default=2, description="Lane record format version.")
    campaign: str = Field(description="Campaign name.")
    matrix_id: str = Field(description="Frozen matrix id the lane was started under.")
    arm: str = Field(description="Arm name.")
    role: str = Field(description="incumbent | candidate.")
    purpose: str = Field(description="campaign | restore.")
    run: str = Field(description="Run folder name, e.g. campaign-001.")
    lane_kind: LaneKind = Field(description="docker | process | simulator.")
    state: Literal["created", "running", "stopped", "removed"] = Field(
        description="Where the run is."
    )
    image: str | None = Field(default=None, description="Pinned image repo@sha256:…, if Docker.")
    image_id: str | None = Field(default=None, description="Local image id the container runs.")
    running_image: str | None = Field(
        default=None, description="Digest the running container was verified to run."
    )
    image_verified: bool | None = Field(
        default=None, description="Running image equals the pinned digest (Docker only)."
    )
    container_id: str | None = Field(default=None, description="Docker container id.")
    container_name: str | None = Field(default=None, description="Docker container name.")
    pid: int | None = Field(default=None, description="Host pid (process group leader).")
    pid_started_at: float | None = Field(
        default=None, description="The pid's start time (epoch s), so a reused pid is not ours."
    )
    command: list[str] = Field(description="Command or container cmd as launched.")
    base_url: str = Field(description="http://host:port of the lane's API.")
    gpu_ids: list[int] = Field(description="GPU indices given to the lane.")
    engine_args: list[str] = Field(description="Engine flags from the arm.")
    added_args: list[str] = Field(
        default_factory=list,
        description="Flags faceoff appended to the command (a vLLM engine's host, port, name).",
    )
    env: dict[str, str] = Field(description="Lane environment; secrets shown as ***.")
    mounts: list[Mount] = Field(description="Bind mounts.")
    memory_limit: str | None = Field(default=None, description="Container memory limit.")
    shm_size: str | None = Field(default=None, description="Container /dev/shm size.")
    created_at: datetime = Field(description="When the lane was created (UTC).")
    started_at: datetime | None = Field(default=None, description="When it was started (UTC).")
    stopped_at: datetime | None = Field(default=None, description="When faceoff stopped it.")
    exit: LaneExit | None = Field(default=None, description="How it ended, once it has.")

    def target(self) -> LaneTarget:
        if self.container_id is not None:
            return LaneTarget(kind="container", container_id=self.container_id, pid=self.pid)
        return LaneTarget(kind="process", pid=self.pid)

    def save(self, run_dir: Path) -> Path:
        return self.write(Path(run_dir) / LANE_FILE, replace=True)


class InspectRecord(Artifact):
    """``inspect.json``: ``docker inspect`` of the lane's container, secrets redacted."""

    schema_version: Literal[1] = Field(default=1, description="Inspect record format version.")
    container_id: str = Field(description="Docker container id.")
    taken_at: datetime = Field(description="When the inspect was taken (UTC).")
    inspect: dict[str, Any] = Field(description="The daemon's inspect document, redacted.")

    def save(self, run_dir: Path) -> Path:
        return self.write(Path(run_dir) / INSPECT_FILE, replace=True)


class ServedModel(Spec):
    id: str = Field(description="Model id as /v1/models lists it (the served name).")
    root: str | None = Field(default=None, description="root: the path the engine loaded.")


class Readiness(Spec):
    ready: bool = Field(description="Both endpoints answered within the startup deadline.")
    reason: str | None = Field(default=None, description="Why not, in a sentence.")
    health_after_s: float | None = Field(default=None, description="Seconds until /health was OK.")
    models_after_s: float | None = Field(
        default=None, description="Seconds until /v1/models listed models."
    )
    models: list[ServedModel] = Field(default_factory=list, description="What /v1/models listed.")
    ready_at: datetime | None = Field(default=None, description="When it became ready (UTC).")


class ExpectedIdentity(Spec):
    image: str | None = Field(default=None, description="Pinned image repo@sha256:…, if any.")
    served_model: str = Field(description="Model id /v1/models must list.")
    root: str | None = Field(default=None, description="root /v1/models must report, if pinned.")
    quantization: str | None = Field(default=None, description="Boot log's quantization= value.")
    weights_sha256: str | None = Field(default=None, description="Weights-manifest hash.")


class ObservedIdentity(Spec):
    image: str | None = Field(default=None, description="Digest the running container runs.")
    models: list[ServedModel] = Field(default_factory=list, description="/v1/models entries.")
    quantizations: list[str] = Field(
        default_factory=list, description="Distinct quantization= values in the boot log."
    )
    weights_sha256: str | None = Field(default=None, description="Weights-manifest hash.")
    weights_detail: str | None = Field(
        default=None, description="Why the manifest could not be hashed, when it could not."
    )

    def root_of(self, model_id: str) -> str | None:
        return next((m.root for m in self.models if m.id == model_id), None)


class Mismatch(Spec):
    field: str = Field(description="image | served_model | root | quantization | weights.")
    expected: str = Field(description="What the matrix (or the baseline) pins.")
    observed: str = Field(description="What the lane showed.")
    source: str = Field(description="Where the observed value came from.")

    @property
    def sentence(self) -> str:
        return f"{self.field}: expected {self.expected}, {self.source} says {self.observed}"


class IdentityVerdict(Spec):
    ok: bool = Field(description="Every pinned field matched.")
    mismatches: list[Mismatch] = Field(default_factory=list, description="What differed.")
    reason: str | None = Field(default=None, description="One sentence naming every mismatch.")


class ManifestFile(Spec):
    path: str = Field(description="Path relative to the model directory (POSIX).")
    sha256: str = Field(description="sha256 of the file's bytes.")
    size: int = Field(description="Size in bytes.")


class WeightsManifest(Spec):
    directory: str = Field(description="Model directory as the lane sees it.")
    host_directory: str = Field(description="The same directory on the host, through mounts.")
    files: list[ManifestFile] = Field(description="Every manifest file, sorted by path.")
    sha256: str = Field(description="sha256 of the canonical JSON of [{path, sha256}, …].")


class IdentityRecord(Artifact):
    """``identity.json``: readiness, what was expected, what was observed, the verdict."""

    schema_version: Literal[1] = Field(default=1, description="Identity record format version.")
    campaign: str = Field(description="Campaign name.")
    arm: str = Field(description="Arm name.")
    run: str = Field(description="Lane run folder name.")
    checked_at: datetime = Field(description="When identity was judged (UTC).")
    readiness: Readiness = Field(description="How readiness went.")
    expected: ExpectedIdentity = Field(description="The matrix's (and baseline's) pins.")
    observed: ObservedIdentity = Field(description="What the lane showed.")
    manifest: WeightsManifest | None = Field(
        default=None, description="Per-file hashes of the weights manifest, when hashed."
    )
    verdict: IdentityVerdict = Field(description="ok, or which fields differed.")
