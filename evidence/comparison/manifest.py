"""``MANIFEST.json``: who wrote the bundle, on what host, for which matrix and arms.

Format history of ``Manifest.schema_version``:
  1 — first release.
  2 — ``posture``: the host's posture at the campaign's start and end, and what changed
      (``collectors.posture``); None for a campaign run without the flow.
  3 — ``signer``: who signed the bundle (a key's fingerprint, or the shared HMAC secret).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from collectors.host_facts import HostFacts, SourceFacts
from collectors.posture import PostureView
from evidence.comparison.model import ArmEntry
from faceoff import __version__
from faceoff.artifact import Artifact, Spec


class ManifestArm(Spec):
    name: str = Field(description="Arm name.")
    role: str = Field(description="incumbent or candidate.")
    lane: str = Field(description="docker, process or simulator.")
    image: str | None = Field(description="Pinned image repo@sha256:….")
    running_image: str | None = Field(description="Digest the container was verified to run.")
    served_model: str | None = Field(description="Model id /v1/models reported.")
    quantizations: list[str] = Field(description="Boot log quantization= values.")
    weights_sha256: str | None = Field(description="Weights-manifest hash.")
    identity_verified: bool | None = Field(description="Identity matched every pin.")
    lane_run: str | None = Field(description="The lane run the identity is from.")


class Manifest(Artifact):
    schema_version: Literal[1, 2, 3] = Field(default=3, description="Manifest format version.")
    tool: Literal["faceoff"] = Field(default="faceoff", description="The tool that wrote it.")
    version: str = Field(description="faceoff version.")
    source: SourceFacts = Field(description="git commit of faceoff's checkout, when known.")
    written_at: datetime = Field(description="When the bundle was (re)written (UTC).")
    campaign: str = Field(description="Campaign name.")
    matrix_id: str = Field(description="Frozen matrix id.")
    host: HostFacts = Field(description="The host the bundle was written on.")
    arms: list[ManifestArm] = Field(description="Arms with digests and identity.")
    posture: PostureView | None = Field(
        default=None, description="Host posture at the campaign's start and end, changes named."
    )
    signer: str | None = Field(
        default=None,
        description="Who signed the bundle: an Ed25519 key's fingerprint, the shared HMAC "
        "secret, or None (unsigned). A bundle that says it was signed and has no seal was "
        "stripped.",
    )


def manifest(
    *,
    campaign: str,
    matrix_id: str,
    arms: list[ArmEntry],
    host: HostFacts,
    source: SourceFacts,
    written_at: datetime,
    posture: PostureView | None = None,
    signer: str | None = None,
) -> Manifest:
    return Manifest(
        posture=posture,
        signer=signer,
        version=__version__,
        source=source,
        written_at=written_at,
        campaign=campaign,
        matrix_id=matrix_id,
        host=host,
        arms=[
            ManifestArm(
                name=a.name,
                role=a.role,
                lane=a.lane,
                image=a.image,
                running_image=a.identity.running_image,
                served_model=a.identity.served_model,
                quantizations=a.identity.quantizations,
                weights_sha256=a.identity.weights_sha256,
                identity_verified=a.identity.verified,
                lane_run=a.identity.lane_run,
            )
            for a in arms
        ],
    )
