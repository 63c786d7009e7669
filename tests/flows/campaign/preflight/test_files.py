"""The preflight's protected files: each a readable regular file, on real files."""

from __future__ import annotations

from pathlib import Path

from flows.campaign.preflight.files import protected_checks


def test_protected_files_must_be_readable_regular_files(tmp_path: Path) -> None:
    good = tmp_path / "routes.yaml"
    good.write_text("routes: []\n")
    folder = tmp_path / "router.d"
    folder.mkdir()
    found = protected_checks([str(good), str(folder), str(tmp_path / "gone.env")])
    assert [c.status.value for c in found] == ["ok", "FAIL", "FAIL"]
    assert "not a regular file" in found[1].finding and "No such file" in found[2].finding
