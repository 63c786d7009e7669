"""The shipped effort A/B example, run for real on the simulator: the rule rules on the
recipe change alone, the control arm is measured beside it, the effort reaches the control
alone, and the imported tool-eval-bench results show their band on the card."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evidence.audit.reverify import audit_bundle
from faceoff.formats.bundle.comparison import Comparison
from flows.prefect.flow_runner import run_campaign
from tests.conftest import free_port
from tests.e2e.matrices import loaded_host_toml
from tests.foundation.cli import REPO

pytestmark = pytest.mark.prefect

EXAMPLE = REPO / "matrix" / "examples" / "sim-effort.toml"
# The shared test hosts stall; the host_stall rule has its own tests (tests/guards).
LOADED_HOST = loaded_host_toml()


def effort_matrix(folder: Path) -> Path:
    """The example on free ports, its quality paths made absolute (they are read from the
    folder the campaign runs in)."""
    text = re.sub(r"port = 1812\d", lambda _: f"port = {free_port()}", EXAMPLE.read_text())
    text = text.replace('"matrix/examples/quality/', f'"{REPO}/matrix/examples/quality/')
    path = folder / "sim-effort.toml"
    path.write_text(text.replace("\n[rule]", LOADED_HOST + "\n[rule]", 1))
    return path


def test_the_effort_example_rules_on_the_recipe_and_shows_the_control_and_the_band(
    tmp_path: Path, workdir: Path
) -> None:
    result = run_campaign(effort_matrix(tmp_path), workdir)
    comparison = Comparison.read(result.bundle / "comparison.json")
    assert comparison.ruling is not None
    assert [c.candidate for c in comparison.ruling.candidates] == ["nvfp4-max"]
    assert [line.metric for line in comparison.ruling.candidates[0].criteria] == [
        "decode_tps", "ttft_s", "output_tps",
    ]  # fmt: skip
    for cell in comparison.cells:  # the control is compared in every cell, by design
        pair = next(p for p in cell.pairs if p.candidate == "exl3-high")
        assert pair.comparable, (cell.id, pair.reason)
        assert cell.variants and "exl3-high" in str(cell.variants)
    (teb,) = comparison.quality
    checks = {(k.candidate, k.metric): k for k in teb.checks}
    assert checks[("exl3-high", "score")].within and checks[("exl3-high", "score")].shortfall == 0
    card = (result.bundle / "RESULT.md").read_text(encoding="utf-8")
    assert card.count("Declared rule:") == 1 and "Declared rule: **" in card
    assert "exl3-high does not trail the incumbent on score: 94 against 94" in card
    assert audit_bundle(result.bundle).ok
