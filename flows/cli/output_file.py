"""Where a command writes a file the operator named: into a folder that exists."""

from __future__ import annotations

from pathlib import Path

from faceoff.errors import FaceoffError


def fresh_file(path: Path) -> None:
    """An output file goes into a folder that exists: a typo in its path is not made real."""
    if path.is_dir():
        raise FaceoffError("is a folder", where=str(path), fix="pass the path of the file to write")
    if not path.parent.is_dir():
        raise FaceoffError(
            "no such folder", where=str(path.parent), fix="create it or correct the path"
        )
