"""``MANIFEST.json``: who wrote the bundle, on what host, for which matrix and arms.

Format history of ``Manifest.schema_version``:
  1 — first release.
  2 — ``posture``: the host's posture at the campaign's start and end, and what changed
      (``faceoff.formats.host_posture``); None for a campaign run without the flow.
  3 — ``signer``: who signed the bundle (a key's fingerprint, or the shared HMAC secret);
      ``waivers``: each preflight FAIL the operator waived to run anyway, with the reason
      (``faceoff.formats.preflight``). Files of versions 1 and 2 still read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import Field

from faceoff import __version__
from faceoff.artifact import Artifact, Spec
from faceoff.formats.bundle.comparison import ArmEntry
from faceoff.formats.host_facts import HostFacts, SourceFacts
from faceoff.formats.host_posture import PostureView
from faceoff.formats.preflight import CheckResult

MANIFEST_FILE = "MANIFEST.json"


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


class ManifestWaiver(Spec):
    check: str = Field(description="The preflight check, as --waive named it.")
    subject: str = Field(description="What it looked at.")
    finding: str = Field(description="What it found.")
    reason: str = Field(description="The operator's reason to run anyway.")


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
    waivers: list[ManifestWaiver] = Field(
        default_factory=list, description="Preflight FAILs the operator waived to run anyway."
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
    waived: Sequence[CheckResult] = (),
) -> Manifest:
    return Manifest(
        posture=posture,
        signer=signer,
        waivers=[
            ManifestWaiver(
                check=c.check, subject=c.subject, finding=c.finding, reason=c.waived or ""
            )
            for c in waived
        ],
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
