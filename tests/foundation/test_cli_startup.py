"""`faceoff --help`, `version` and usage errors load none of the machinery of a campaign."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.foundation.cli import REPO

HEAVY = ("matplotlib", "aiohttp", "prefect", "pynvml", "docker", "psutil", "sqlalchemy")
# What each command does, loaded only when it runs (flows.cli.app names it at the call).
COMMANDS = tuple(
    f"flows.cli.{name}"
    for name in (
        "validate",
        "init",
        "run",
        "restore",
        "audit",
        "review",
        "tickets",
        "status",
        "history",
    )
)
PROBE = """
import json, sys
from flows.cli import app
sys.argv = ["faceoff", *{args!r}]
try:
    app.main()
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
    assert [m for m in COMMANDS if m in loaded] == []


def test_importtime_of_help_lists_no_heavy_module() -> None:
    """`python -X importtime -m flows.cli.app --help`: the interpreter's own list of every module
    it imported, read from stderr (one `import time: … | module` line each)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "flows.cli.app", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "Usage" in done.stdout and "validate" in done.stdout, done.stdout
    imported = [
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    ]
    assert "flows.cli.app" in imported or "typer" in imported, done.stderr[-2000:]
    heavy = sorted({name.split(".")[0] for name in imported} & set(HEAVY))
    assert heavy == [], f"-X importtime -m flows.cli.app --help imported {heavy}"
    assert [m for m in COMMANDS if m in imported] == []
