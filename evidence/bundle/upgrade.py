"""``comparison.json`` read back, an older format moved forward by pure functions.

Each step takes one version's JSON to the next; a file newer than this faceoff is refused
(upgrade faceoff), one older than the oldest step is rebuilt from its bundle's native
files instead (``faceoff audit`` rebuilds it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evidence.comparison.model import COMPARISON_VERSION, Comparison
from faceoff.errors import FaceoffError

Json = dict[str, Any]


def v11_to_v12(data: Json) -> Json:
    """12 adds each cell's ``window_ratios`` and a sequential look's ``descriptive``, both
    with defaults (none, and a look that may decide): only the version moves."""
    return {**data, "schema_version": 12}


STEPS: dict[int, Callable[[Json], Json]] = {11: v11_to_v12}


def upgraded(data: Json, where: str = "comparison.json") -> Json:
    """``data`` at the current version, or FaceoffError naming the file and what to do."""
    version = data.get("schema_version")
    if not isinstance(version, int) or version > COMPARISON_VERSION:
        raise FaceoffError(
            f"schema_version {version!r} is not one this faceoff reads "
            f"(at most {COMPARISON_VERSION})",
            where=where,
            fix="upgrade faceoff",
        )
    while version < COMPARISON_VERSION:
        step = STEPS.get(version)
        if step is None:
            raise FaceoffError(
                f"schema_version {version} is older than any upgrade ({min(STEPS)})",
                where=where,
                fix="rebuild it from the bundle's native files with an older faceoff's audit",
            )
        data, version = step(data), version + 1
    return data


def read_comparison(path: Path) -> Comparison:
    """The comparison at ``path``, upgraded to the current version."""
    return Comparison.model_validate(upgraded(json.loads(path.read_bytes()), str(path)))
