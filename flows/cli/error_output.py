"""What a command given ``--json`` prints when it fails: an error object on stdout, so a
script that parses the output reads the failure too (exit status 2 as ever).

Format history of ``ErrorOutput.schema_version``:
  1 — first release.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from faceoff.artifact import Artifact, Spec
from faceoff.exits import Exit


class ErrorDetail(Spec):
    message: str = Field(description="The whole error, as the command prints it without --json.")
    what: str = Field(description="What was wrong.")
    where: str | None = Field(description="The file, field, arm, cell or option concerned.")
    fix: str | None = Field(description="What to do next.")


class ErrorOutput(Artifact):
    schema_version: Literal[1] = Field(default=1, description="Error output format version.")
    ok: Literal[False] = Field(default=False, description="Always false: the command failed.")
    exit_code: int = Field(description="The command's exit status.")
    error: ErrorDetail = Field(description="The error.")


def error_json(message: str, *, what: str, where: str | None, fix: str | None) -> str:
    detail = ErrorDetail(message=message, what=what, where=where, fix=fix)
    return ErrorOutput(exit_code=Exit.REFUSED, error=detail).model_dump_json(indent=2)
