"""The statement ``SEAL.dsse.json`` signs: an in-toto Statement v1, what a seal says, as
in-toto tooling reads it.

``{"_type": "https://in-toto.io/Statement/v1", "subject": [{"name", "digest": {"sha256"}}],
"predicateType": …, "predicate": {…}}``: the subjects are the files a seal covers, each with
its sha256; the predicate is faceoff's own (``SealPredicate``), typed by ``SEAL_PREDICATE``.
The statement is in-toto's format, versioned by its ``_type``; the predicate carries
faceoff's ``schema_version``.

Format history of ``SealPredicate.schema_version``:
  1 — first release.
  2 — ``sequence``, ``sealed_at`` and ``supersedes``: each seal of a campaign names the one it
      replaces (a hash chain), so an older seal put back is told apart; version 1 reads
      with them None.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Final, Literal

from pydantic import ConfigDict, Field

from faceoff.artifact import Spec
from faceoff.canonical import canonical_bytes

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
SEAL_PREDICATE: Final = "urn:faceoff:bundle-seal:v1"


class Subject(Spec):
    name: str = Field(description="Path of the file, relative to the bundle, '/'-separated.")
    digest: dict[str, str] = Field(description="Its digests by algorithm: {'sha256': hex}.")


class SealPredicate(Spec):
    schema_version: Literal[1, 2] = Field(default=2, description="Predicate format version.")
    campaign: str = Field(description="Campaign name.")
    matrix_id: str = Field(description="Frozen matrix id of the campaign.")
    sealed: str = Field(
        description="What is sealed and by which step: e.g. 'bundle at close', "
        "'bundle after review'."
    )
    signer: str = Field(description="Fingerprint of the key that signed this statement.")
    sequence: int | None = Field(
        default=None, ge=1, description="This seal's number in the campaign's chain, from 1."
    )
    sealed_at: datetime | None = Field(default=None, description="When it was sealed (UTC).")
    supersedes: str | None = Field(
        default=None,
        description="sha256 of the seal (SEAL.dsse.json's bytes) it replaces; None for the first.",
    )


class Statement(Spec):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    type_: Literal["https://in-toto.io/Statement/v1"] = Field(
        default=STATEMENT_TYPE, alias="_type", description="in-toto Statement version."
    )
    subject: list[Subject] = Field(description="The sealed files, sorted by name.")
    predicate_type: Literal["urn:faceoff:bundle-seal:v1"] = Field(
        default=SEAL_PREDICATE, alias="predicateType", description="faceoff's seal predicate."
    )
    predicate: SealPredicate = Field(description="What the seal is of, and by whom.")

    def payload(self) -> bytes:
        """The canonical JSON bytes an envelope carries."""
        return canonical_bytes(self.model_dump(mode="json", by_alias=True))

    def files(self) -> dict[str, str]:
        """name -> sha256 of every subject (one without a sha256 maps to '')."""
        return {s.name: s.digest.get("sha256", "") for s in self.subject}


def seal_statement(files: Mapping[str, str], predicate: SealPredicate) -> Statement:
    """The statement over ``files`` (name -> sha256)."""
    subjects = [Subject(name=name, digest={"sha256": files[name]}) for name in sorted(files)]
    return Statement(subject=subjects, predicate=predicate)
