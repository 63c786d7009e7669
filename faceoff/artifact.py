"""The base of every artifact faceoff writes.

Every artifact is a pydantic model with ``schema_version`` as a ``Literal`` and
``extra="forbid"``, so a misspelled key is an error instead of a silent drop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Self

from pydantic import BaseModel, ConfigDict, ValidationError

from faceoff.bounded import RECORD_CAP, read_bytes
from faceoff.canonical import canonical_json, content_sha256
from faceoff.errors import FaceoffError
from faceoff.files import write_text_atomic


class Spec(BaseModel):
    """A strict model: unknown keys are errors and instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Artifact(Spec):
    """A strict model that is written to disk; subclasses pin ``schema_version``."""

    def canonical(self) -> str:
        return canonical_json(self.model_dump(mode="json"))

    def sha256(self) -> str:
        return content_sha256(self.model_dump(mode="json"))

    def write(self, path: Path, *, replace: bool = False) -> Path:
        """Write atomically as indented JSON; refuses to overwrite unless ``replace``."""
        text = self.model_dump_json(indent=2) + "\n"
        return write_text_atomic(path, text, replace=replace)

    @classmethod
    def read(cls, path: Path) -> Self:
        return cls.parse(cls.read_bytes(path), path)

    @classmethod
    def read_bytes(cls, path: Path) -> bytes:
        """The file's bytes, as ``read`` reads them."""
        try:
            return read_bytes(Path(path), RECORD_CAP)
        except FileNotFoundError as exc:
            raise FaceoffError(
                f"{cls.__name__} file is missing", where=str(path), fix="check the bundle path"
            ) from exc

    @classmethod
    def parse(cls, raw: bytes, path: Path) -> Self:
        """The artifact in ``raw``, read from ``path`` (which an error names)."""
        try:
            return cls.model_validate_json(raw)
        except ValidationError as exc:
            raise FaceoffError(
                f"not a valid {cls.__name__}: {first_error(exc)}",
                where=str(path),
                fix="the file was edited or written by another faceoff version",
            ) from exc


def first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc}: {err['msg']}" if loc else str(err["msg"])
