"""`faceoff restore` as a subprocess, where there is nothing to restore."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ledger.db import open_ledger, resolve_url
from tests.lanes.helpers import REPO


def faceoff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flows", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


def test_nothing_pending_changes_nothing(tmp_path: Path) -> None:
    result = faceoff("restore", "--workdir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "no campaign needs restoration; nothing changed\n"


def test_an_unknown_campaign_is_an_error_naming_it(tmp_path: Path) -> None:
    no_ledger = faceoff("restore", "--campaign", "nope", "--workdir", str(tmp_path))
    assert no_ledger.returncode == 2 and "no ledger yet, so no campaign" in no_ledger.stderr
    open_ledger(resolve_url(None, tmp_path)).dispose()
    result = faceoff("restore", "nope", "--workdir", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.startswith("error: no campaign named 'nope' in the ledger")
    deprecated = faceoff("restore", "--campaign", "nope", "--workdir", str(tmp_path))
    assert deprecated.returncode == 2 and deprecated.stderr == result.stderr
