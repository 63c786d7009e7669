"""The preflight's check of Prefect's home: a folder the run can write."""

from __future__ import annotations

from pathlib import Path

from flows.campaign.preflight.environment import prefect_home_check


def test_prefect_home_behind_a_file_is_not_writable(tmp_path: Path) -> None:
    assert prefect_home_check(tmp_path / "runs" / ".prefect").status.value == "ok"
    blocker = tmp_path / "runs"
    blocker.write_text("a file where the workdir should be")
    found = prefect_home_check(blocker / ".prefect")
    assert found.status.value == "FAIL" and "is not a folder" in found.finding
