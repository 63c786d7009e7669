"""`faceoff --help`, `version` and usage errors load none of the machinery of a campaign."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.foundation.cli import REPO

HEAVY = ("matplotlib", "aiohttp", "prefect", "pynvml", "docker", "psutil", "sqlalchemy")
PROBE = """
import json, sys
from flows import cli
sys.argv = ["faceoff", *{args!r}]
try:
    cli.main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def modules_after(*args: str) -> list[str]:
    """The modules a fresh interpreter holds after `faceoff ARGS`."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(args=list(args))],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [("--help",), ("version",), ("statuss",), ("run",)])
def test_the_command_line_answers_without_loading_a_campaigns_machinery(
    args: tuple[str, ...],
) -> None:
    loaded = modules_after(*args)
    heavy = sorted({m.split(".")[0] for m in loaded} & set(HEAVY))
    assert heavy == [], f"faceoff {' '.join(args)} imported {heavy}"
    assert "flows.commands" not in loaded
