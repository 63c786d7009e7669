"""``matrix.frozen.json``: the matrix frozen, canonical JSON of it and its resolved registry,
id = sha256.

Format history of ``FrozenMatrix.schema_version``:
  1 — first release.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from faceoff.artifact import Artifact
from faceoff.canonical import content_sha256
from faceoff.errors import FaceoffError
from matrix.families import FamilySpec
from matrix.model import Matrix


class FrozenMatrix(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Frozen-matrix format version.")
    matrix_id: str = Field(description="sha256 of the canonical JSON of `content`.")
    matrix: Matrix = Field(description="The validated, expanded spec.")
    registry: tuple[FamilySpec, ...] = Field(description="The family registry as frozen.")

    @property
    def short_id(self) -> str:
        return self.matrix_id[:12]

    def family(self, name: str) -> FamilySpec:
        for fam in self.registry:
            if fam.name == name:
                return fam
        raise KeyError(name)


def frozen_content(matrix: Matrix, registry: Sequence[FamilySpec]) -> dict[str, Any]:
    """What the matrix id is the hash of: the spec and the registry as frozen."""
    return {
        "matrix": matrix.model_dump(mode="json"),
        "registry": [f.model_dump(mode="json") for f in registry],
    }


def freeze(matrix: Matrix) -> FrozenMatrix:
    registry = matrix.families.resolve()
    return FrozenMatrix(
        matrix_id=content_sha256(frozen_content(matrix, registry)),
        matrix=matrix,
        registry=registry,
    )


def read_frozen(path: Path) -> FrozenMatrix:
    """Read a frozen matrix and prove its id still matches its content."""
    frozen = FrozenMatrix.read(path)
    actual = content_sha256(frozen_content(frozen.matrix, frozen.registry))
    if actual != frozen.matrix_id:
        raise FaceoffError(
            f"frozen matrix content hashes to {actual[:12]} but claims id {frozen.matrix_id[:12]}",
            where=str(path),
            fix="the file was edited after freezing; freeze the TOML again",
        )
    return frozen
