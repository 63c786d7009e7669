"""Running the ``faceoff`` CLI as a real subprocess, as the tests of every command do."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI_TIMEOUT_S = 120


def faceoff(
    *args: str, cwd: Path = REPO, env: Mapping[str, str] | None = None, columns: int = 200
) -> subprocess.CompletedProcess[str]:
    """``python -m flows ARGS`` on a terminal this wide, without the caller's environment
    but for ``PYTHONPATH``: the checkout under test, wherever ``cwd`` is."""
    return subprocess.run(
        [sys.executable, "-m", "flows", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": str(columns), **_checkout(), **(env or {})},
    )


def _checkout() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": path} if path else {}
