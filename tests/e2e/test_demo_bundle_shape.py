"""The demo's bundle keeps its shape: the files it holds and the keys of its
``comparison.json`` are those of the bundle the demo made before the formats moved to
``faceoff/formats/`` (tests/faceoff/formats/demo_bundle_shape.json). A module renamed or a
model split must leave what a campaign writes as it was; a change of the formats themselves
regenerates the shape (``python -m tests.faceoff.formats.bundle_shape BUNDLE``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import free_port
from tests.e2e.conftest import REPO, faceoff_run
from tests.faceoff.formats.bundle_shape import SHAPE_PATH, bundle_shape

DEMO = REPO / "matrix" / "examples" / "sim-faceoff.toml"

# The demo's rule decides nothing in 4 requests a pass, so every pass runs whatever the host's
# load; a campaign, so on a quiet host.
pytestmark = [pytest.mark.prefect, pytest.mark.alone]


def demo_on_free_ports(tmp_path: Path) -> Path:
    """The demo as shipped, its two lanes on free ports (another demo may serve 18101)."""
    text = DEMO.read_text(encoding="utf-8")
    for port in ("18101", "18102"):
        text = text.replace(f"port = {port}", f"port = {free_port()}")
    path = tmp_path / DEMO.name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_demo_bundle_holds_the_files_and_keys_it_held_before_the_move(
    harness_api: str, workdir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "run.log"
    run = faceoff_run(demo_on_free_ports(tmp_path), workdir, harness_api, log=log)
    assert run.wait(600) == 0, log.read_text()[-4000:]
    shape = bundle_shape(workdir / "sim-faceoff")
    before = json.loads(SHAPE_PATH.read_text(encoding="utf-8"))
    assert shape["files"] == before["files"]
    assert shape["comparison_keys"] == before["comparison_keys"]
